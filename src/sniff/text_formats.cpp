// Text formats with a structure: HTTP/1.x heads (RFC 9112 start line + header fields), JSON (a
// bounded validating scan: tokens, nesting, balance), XML (declaration or root element, then a
// bounded well-formedness scan of tags) and HTML (doctype or <html>, "</html>" as the end).
// Every scan is bounded (kScanLimit) and allocation-free until a result is built.
#include "common.h"
#include "dumpsift/sniff/json_text.h"

#include <algorithm>
#include <cstring>

namespace dumpsift::sniffimpl {
namespace {

/// How much of a buffer the structural text scans look at.
constexpr size_t kScanLimit = 64u << 10;

/// True for JSON/XML whitespace.
bool isSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/// The offset after a UTF-8 BOM and whitespace starting at `i` (bounded by `n`).
size_t skipBomAndSpace(Bytes d, size_t n) {
  size_t i = hasAt(d, 0, "\xef\xbb\xbf") ? 3 : 0;
  while (i < n && isSpace(d[i]))
    ++i;
  return i;
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

constexpr llvm::StringRef kHttpMethods[] = {"GET",     "POST",  "PUT",     "DELETE", "HEAD",
                                            "OPTIONS", "PATCH", "CONNECT", "TRACE"};
constexpr size_t kMaxTarget = 8192, kMaxHeaderLine = 8192;
constexpr unsigned kMaxHeaders = 256;

/// RFC 9110 tchar.
bool isTokenChar(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

/// The length of the method at the start of `d` when it is followed by a space, else 0.
size_t methodLength(Bytes d) {
  for (llvm::StringRef m : kHttpMethods)
    if (hasAt(d, 0, m) && d.size() > m.size() && d[m.size()] == ' ')
      return m.size();
  return 0;
}

/// True when data[at..] is "HTTP/1.0" or "HTTP/1.1".
bool isHttpVersion(Bytes d, size_t at) {
  return hasAt(d, at, "HTTP/1.") && d.size() > at + 7 && (d[at + 7] == '0' || d[at + 7] == '1');
}

class HttpSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Http; }

  bool quickCheck(Bytes head) const override {
    return startsWith(head, "HTTP/1.") || methodLength(head) != 0;
  }

  /// "HTTP/1.x" found; a status line starts there, a request line starts at the method before
  /// " <target> HTTP/1.x".
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    const size_t end = std::min(buffer.size(), limit + kMaxTarget + 16);
    for (size_t q = findLiteralIn(buffer, from, end, "HTTP/1."); q != kNoCandidate;
         q = findLiteralIn(buffer, q + 1, end, "HTTP/1.")) {
      if (q < limit && buffer.size() > q + 9 && buffer[q + 8] == ' ')
        return q; // status line
      if (q < 2 || buffer[q - 1] != ' ' || buffer.size() <= q + 9 || buffer[q + 8] != '\r')
        continue;
      size_t s = q - 1; // the space before the version
      while (s > from && buffer[s - 1] > 0x20 && buffer[s - 1] < 0x7f && q - s < kMaxTarget)
        --s;
      if (s == from || buffer[s - 1] != ' ')
        continue;
      size_t m = s - 1; // the space before the target
      while (m > from && buffer[m - 1] >= 'A' && buffer[m - 1] <= 'Z' && s - m < 8)
        --m;
      if (m < s - 1 && m < limit && m >= from)
        return m;
    }
    return kNoCandidate;
  }

  /// A complete, valid start line is required; header fields are then parsed up to the empty
  /// line (a malformed or cut head is still http, with head_complete false).
  std::optional<SniffResult> validate(Bytes d) const override {
    const size_t n = std::min(d.size(), kScanLimit);
    size_t p = 0;
    bool response = false;
    uint64_t status = 0;
    size_t method_len = 0, target_start = 0, target_len = 0, reason_start = 0, reason_len = 0;
    char version = 0;
    if (isHttpVersion(d, 0)) {
      response = true;
      version = static_cast<char>(d[7]);
      if (n < 13 || d[8] != ' ')
        return std::nullopt;
      for (size_t k = 9; k < 12; ++k) {
        if (d[k] < '0' || d[k] > '9')
          return std::nullopt;
        status = status * 10 + (d[k] - '0');
      }
      if (status < 100 || status > 599)
        return std::nullopt;
      p = 12;
      if (d[p] == ' ') {
        reason_start = ++p;
        while (p < n && p - reason_start < 1024 && (d[p] == '\t' || (d[p] >= 0x20 && d[p] != 0x7f)))
          ++p;
        reason_len = p - reason_start;
      }
    } else {
      method_len = methodLength(d);
      if (!method_len)
        return std::nullopt;
      target_start = p = method_len + 1;
      while (p < n && p - target_start < kMaxTarget && d[p] > 0x20 && d[p] < 0x7f)
        ++p;
      target_len = p - target_start;
      if (target_len == 0 || p >= n || d[p] != ' ' || !isHttpVersion(d, p + 1))
        return std::nullopt;
      version = static_cast<char>(d[p + 8]);
      p += 9;
    }
    if (!hasAt(d.take_front(n), p, "\r\n"))
      return std::nullopt;
    p += 2;

    // Header fields.
    bool head_complete = false;
    unsigned headers = 0;
    std::optional<uint64_t> content_length;
    Bytes content_type, content_encoding, transfer_encoding, host;
    while (headers < kMaxHeaders && p < n) {
      if (hasAt(d.take_front(n), p, "\r\n")) {
        head_complete = true;
        p += 2;
        break;
      }
      size_t q = p;
      while (q < n && q - p < 256 && isTokenChar(d[q]))
        ++q;
      if (q == p || q >= n || d[q] != ':')
        break;
      const size_t name_end = q++;
      while (q < n && (d[q] == ' ' || d[q] == '\t'))
        ++q;
      const size_t value_start = q;
      while (q < n && q - p < kMaxHeaderLine && (d[q] == '\t' || (d[q] >= 0x20 && d[q] != 0x7f)))
        ++q;
      if (q + 2 > n || d[q] != '\r' || d[q + 1] != '\n')
        break;
      size_t value_end = q;
      while (value_end > value_start && (d[value_end - 1] == ' ' || d[value_end - 1] == '\t'))
        --value_end;
      const Bytes name = d.slice(p, name_end - p);
      const Bytes value = d.slice(value_start, value_end - value_start);
      auto is = [&](llvm::StringRef lower) {
        return name.size() == lower.size() && hasAtNoCase(name, 0, lower);
      };
      if (is("content-type"))
        content_type = value;
      else if (is("content-encoding"))
        content_encoding = value;
      else if (is("transfer-encoding"))
        transfer_encoding = value;
      else if (is("host"))
        host = value;
      else if (is("content-length")) {
        uint64_t v = 0;
        bool ok = !value.empty() && value.size() <= 15;
        for (uint8_t c : value)
          ok = ok && c >= '0' && c <= '9' && ((v = v * 10 + (c - '0')), true);
        if (ok)
          content_length = v;
      }
      ++headers;
      p = q + 2;
    }

    uint64_t length = p;
    bool complete = false, estimated = true;
    Bytes body;
    if (head_complete) {
      const uint64_t avail = d.size() - p;
      if (content_length) {
        complete = *content_length <= avail;
        length = p + std::min(*content_length, avail);
        body = d.slice(p, std::min(*content_length, avail));
        estimated = !complete;
      } else if (!transfer_encoding.empty() || response) {
        length = d.size(); // the body runs to the end of the connection or of chunked encoding
        body = d.drop_front(p);
      } else {
        complete = true; // a request without a body
        estimated = false;
      }
    }
    const std::optional<ContentKind> body_kind = nestedKind(body);
    SniffResult r = makeResult(ContentKind::Http, length, estimated);
    r.details.set("version", std::string("1.") + version);
    if (response) {
      r.details.set("status", status);
      r.details.set("reason", printableString(d.slice(reason_start, reason_len)));
    } else {
      r.details.set("method", printableString(d.take_front(method_len)));
      r.details.set("target", printableString(d.slice(target_start, target_len), 512));
    }
    r.details.set("header_count", uint64_t(headers));
    r.details.set("head_complete", head_complete);
    if (head_complete) {
      r.body = MessageBody{p, body_kind, !transfer_encoding.empty()};
      r.details.set("head_length", uint64_t(p));
    }
    if (!host.empty())
      r.details.set("host", printableString(host));
    if (!content_type.empty())
      r.details.set("content_type", printableString(content_type));
    if (content_length)
      r.details.set("content_length", *content_length);
    if (!content_encoding.empty())
      r.details.set("content_encoding", printableString(content_encoding));
    if (!transfer_encoding.empty())
      r.details.set("transfer_encoding", printableString(transfer_encoding));
    r.setComplete(complete);
    if (body_kind)
      r.details.set("body_kind", kindName(*body_kind).str());
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

constexpr unsigned kMaxJsonDepth = 512;
/// Invalid JSON after at least this many valid bytes is reported as corrupt JSON, not rejected.
constexpr size_t kCorruptAfter = 256;

enum class ScanEnd : uint8_t { Closed, Truncated, Limit, Invalid };
enum class Token : uint8_t { Ok, Cut, Bad };

struct JsonScan {
  ScanEnd end = ScanEnd::Invalid;
  size_t pos = 0; // after the value (Closed), where data ended (Truncated) or the bad byte
  unsigned max_depth = 0;
};

/// A string starting at d[i] == '"'; on Ok, `i` is after the closing quote. NUL or the end of
/// the scanned range inside the string is Cut; control characters and bad escapes are Bad.
Token jsonString(Bytes d, size_t n, size_t &i) {
  for (++i; i < n;) {
    const uint8_t c = d[i];
    if (c == '"') {
      ++i;
      return Token::Ok;
    }
    if (c == '\\') {
      if (i + 1 >= n) {
        i = n;
        return Token::Cut;
      }
      const uint8_t e = d[i + 1];
      if (e == 'u') {
        for (size_t k = 2; k < 6; ++k) {
          if (i + k >= n || d[i + k] == 0) {
            i = std::min(i + k, n);
            return Token::Cut;
          }
          if (!llvm::isHexDigit(d[i + k]))
            return Token::Bad;
        }
        i += 6;
      } else if (e != 0 && std::strchr("\"\\/bfnrt", e)) {
        i += 2;
      } else {
        if (e != 0)
          return Token::Bad;
        ++i; // the NUL ends the text
        return Token::Cut;
      }
    } else if (c < 0x20) {
      return c == 0 ? Token::Cut : Token::Bad;
    } else {
      ++i;
    }
  }
  return Token::Cut;
}

/// A number at d[i] per the JSON grammar; on Ok, `i` is after it.
Token jsonNumber(Bytes d, size_t n, size_t &i) {
  auto digits = [&]() {
    const size_t s = i;
    while (i < n && d[i] >= '0' && d[i] <= '9')
      ++i;
    return i - s;
  };
  if (d[i] == '-')
    ++i;
  if (i >= n)
    return Token::Cut;
  if (d[i] == '0')
    ++i;
  else if (!digits())
    return Token::Bad;
  if (i < n && d[i] == '.') {
    ++i;
    if (!digits())
      return i >= n ? Token::Cut : Token::Bad;
  }
  if (i < n && (d[i] == 'e' || d[i] == 'E')) {
    ++i;
    if (i < n && (d[i] == '+' || d[i] == '-'))
      ++i;
    if (!digits())
      return i >= n ? Token::Cut : Token::Bad;
  }
  return i >= n ? Token::Cut : Token::Ok;
}

/// true/false/null at d[i]; a prefix cut by the end of the range is Cut.
Token jsonLiteral(Bytes d, size_t n, size_t &i) {
  llvm::StringRef word = d[i] == 't' ? "true" : d[i] == 'f' ? "false" : "null";
  for (size_t k = 0; k < word.size(); ++k) {
    if (i + k >= n || d[i + k] == 0) {
      i += k;
      return Token::Cut;
    }
    if (d[i + k] != static_cast<uint8_t>(word[k]))
      return Token::Bad;
  }
  i += word.size();
  return Token::Ok;
}

/// Validates JSON from the first '{' or '[' over at most `limit` bytes: tokens, nesting and
/// bracket balance. Fixed-size nesting stack, no allocation.
JsonScan scanJson(Bytes d, size_t limit = kScanLimit) {
  JsonScan s;
  const size_t n = std::min(d.size(), limit);
  const bool limited = d.size() > limit;
  uint64_t is_object[kMaxJsonDepth / 64] = {};
  unsigned depth = 0;
  enum State { Value, ValueOrClose, Key, KeyOrClose, Colon, CommaOrClose } state = Value;
  size_t i = skipBomAndSpace(d, n);
  if (i >= n || (d[i] != '{' && d[i] != '['))
    return s;
  auto finish = [&](ScanEnd end, size_t pos) {
    s.end = end;
    s.pos = pos;
    return s;
  };
  auto cut = [&](size_t pos) {
    return finish(pos >= n && limited ? ScanEnd::Limit : ScanEnd::Truncated, pos);
  };
  for (;;) {
    while (i < n && isSpace(d[i]))
      ++i;
    if (i >= n || d[i] == 0)
      return cut(i);
    const uint8_t c = d[i];
    bool value_done = false;
    switch (state) {
    case Value:
    case ValueOrClose:
    case Key:
    case KeyOrClose:
      if ((state == ValueOrClose && c == ']') || (state == KeyOrClose && c == '}')) {
        --depth;
        ++i;
        value_done = true;
        break;
      }
      if (state == Key || state == KeyOrClose) {
        if (c != '"')
          return finish(ScanEnd::Invalid, i);
        const Token t = jsonString(d, n, i);
        if (t != Token::Ok)
          return t == Token::Cut ? cut(i) : finish(ScanEnd::Invalid, i);
        state = Colon;
        break;
      }
      if (c == '{' || c == '[') {
        if (depth >= kMaxJsonDepth)
          return finish(ScanEnd::Limit, i);
        if (c == '{')
          is_object[depth / 64] |= uint64_t(1) << (depth % 64);
        else
          is_object[depth / 64] &= ~(uint64_t(1) << (depth % 64));
        ++depth;
        s.max_depth = std::max(s.max_depth, depth);
        ++i;
        state = c == '{' ? KeyOrClose : ValueOrClose;
        break;
      }
      {
        Token t;
        if (c == '"')
          t = jsonString(d, n, i);
        else if (c == '-' || (c >= '0' && c <= '9'))
          t = jsonNumber(d, n, i);
        else if (c == 't' || c == 'f' || c == 'n')
          t = jsonLiteral(d, n, i);
        else
          return finish(ScanEnd::Invalid, i);
        if (t != Token::Ok)
          return t == Token::Cut ? cut(i) : finish(ScanEnd::Invalid, i);
        value_done = true;
      }
      break;
    case Colon:
      if (c != ':')
        return finish(ScanEnd::Invalid, i);
      ++i;
      state = Value;
      break;
    case CommaOrClose: {
      const bool in_object = is_object[(depth - 1) / 64] >> ((depth - 1) % 64) & 1;
      if (c == ',') {
        ++i;
        state = in_object ? Key : Value;
      } else if (c == (in_object ? '}' : ']')) {
        --depth;
        ++i;
        value_done = true;
      } else {
        return finish(ScanEnd::Invalid, i);
      }
      break;
    }
    }
    if (value_done) {
      if (depth == 0)
        return finish(ScanEnd::Closed, i);
      state = CommaOrClose;
    }
  }
}

// Text has no signature, so the region scan believes JSON text only where it is strong: an
// object or array opening as JSON does ('{"', '[{"', '["' or '[' and a digit, whitespace allowed
// between), where a value of its own can start (not right after a byte JSON puts before a nested
// value, nor after a quote or a backslash, as inside a string: so the values nested in JSON that
// fails to close are not tried again, one by one), valid to its closing bracket within
// kJsonTextLimit bytes and at least kSmallestJsonText long (shorter bracketed fragments occur in
// any text).
constexpr uint64_t kSmallestJsonText = 256;
constexpr uint64_t kJsonTextLimit = 16u << 20;

/// True when memory[i] can start JSON text of its own (see above).
bool jsonTextLead(Bytes memory, uint64_t i) {
  const uint8_t open = memory[i];
  if (open != '{' && open != '[')
    return false;
  if (i > 0) {
    const uint8_t before = memory[i - 1];
    if (before == '[' || before == ',' || before == ':' || before == '"' || before == '\\' ||
        isSpace(before))
      return false;
  }
  // The byte after `from` and at most 64 bytes of whitespace (0 past the end).
  auto next_token = [&](uint64_t from, uint64_t &at) -> uint8_t {
    at = from + 1;
    while (at < memory.size() && at - from <= 64 && isSpace(memory[at]))
      ++at;
    return at < memory.size() ? memory[at] : 0;
  };
  uint64_t at = 0;
  const uint8_t c = next_token(i, at);
  if (open == '{')
    return c == '"';
  if (c == '"' || (c >= '0' && c <= '9'))
    return true;
  return c == '{' && next_token(at, at) == '"';
}

class JsonSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Json; }

  /// An object or an array.
  llvm::StringRef closedLeadBytes() const override { return "{["; }

  /// JSON text of its own that closes within kJsonTextLimit and is at least kSmallestJsonText
  /// long (see jsonTextLead).
  std::optional<uint64_t> closedLength(Bytes memory, size_t at) const override {
    if (at >= memory.size() || !jsonTextLead(memory, at))
      return std::nullopt;
    const std::optional<uint64_t> length =
        closedJsonValueLength(memory.drop_front(at), kJsonTextLimit);
    if (!length || *length < kSmallestJsonText)
      return std::nullopt;
    return length;
  }

  /// '{' or '[' (after a BOM and whitespace) followed by something that can come next in JSON.
  bool quickCheck(Bytes head) const override {
    size_t i = skipBomAndSpace(head, head.size());
    if (i >= head.size() || (head[i] != '{' && head[i] != '['))
      return false;
    const uint8_t open = head[i++];
    while (i < head.size() && isSpace(head[i]))
      ++i;
    if (i >= head.size())
      return true;
    const uint8_t c = head[i];
    if (open == '{')
      return c == '"' || c == '}';
    return c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
           c == 'f' || c == 'n' || c == ']';
  }

  /// The bounded validating scan: a closed value is complete; valid JSON cut by the end of the
  /// buffer (or a NUL) is truncated; invalid bytes after kCorruptAfter valid ones are corrupt.
  std::optional<SniffResult> validate(Bytes d) const override {
    const JsonScan s = scanJson(d);
    const size_t first = skipBomAndSpace(d, std::min(d.size(), kScanLimit));
    if (first >= d.size())
      return std::nullopt;
    switch (s.end) {
    case ScanEnd::Closed:
      break;
    case ScanEnd::Truncated:
    case ScanEnd::Limit:
      if (s.pos < 8)
        return std::nullopt;
      break;
    case ScanEnd::Invalid:
      if (s.pos < kCorruptAfter)
        return std::nullopt;
      break;
    }
    // Past the scan limit the value is not validated; it ends where the text does.
    const uint64_t length = s.end == ScanEnd::Limit ? textEnd(d, s.pos) : s.pos;
    SniffResult r = makeResult(ContentKind::Json, length, s.end != ScanEnd::Closed);
    r.details.set("top_level", std::string(d[first] == '{' ? "object" : "array"));
    r.setComplete(s.end == ScanEnd::Closed);
    r.setTruncated(s.end == ScanEnd::Truncated);
    r.details.set("status", std::string(s.end == ScanEnd::Closed      ? "complete"
                                        : s.end == ScanEnd::Truncated ? "truncated"
                                        : s.end == ScanEnd::Limit     ? "scan_limit"
                                                                      : "corrupt"));
    r.details.set("max_depth", uint64_t(s.max_depth));
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// XML
// ---------------------------------------------------------------------------------------------

constexpr unsigned kMaxXmlNames = 64; // nesting levels whose names are checked against end tags

/// XML NameStartChar, ASCII subset plus any non-ASCII byte.
bool isNameStart(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
}
bool isNameChar(uint8_t c) {
  return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
/// Text that may appear in XML character data or attribute values.
bool isXmlTextByte(uint8_t c) {
  return c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
}

struct XmlScan {
  ScanEnd end = ScanEnd::Invalid;
  size_t pos = 0;
  bool declaration = false;
  size_t root_start = 0, root_len = 0;
  size_t encoding_start = 0, encoding_len = 0;
};

/// Skips to just after `terminator` from `i`; text bytes only. Returns Cut when the range ends
/// (or a NUL comes) first, Bad on a control byte.
Token skipPast(Bytes d, size_t n, size_t &i, llvm::StringRef terminator) {
  for (; i < n; ++i) {
    if (d[i] == static_cast<uint8_t>(terminator[0]) && hasAt(d.take_front(n), i, terminator)) {
      i += terminator.size();
      return Token::Ok;
    }
    if (!isXmlTextByte(d[i]))
      return d[i] == 0 ? Token::Cut : Token::Bad;
  }
  return Token::Cut;
}

/// Bounded well-formedness scan: optional declaration, prolog (comments, PIs, doctype), then the
/// root element with nested tags checked against their end tags (names checked for the first
/// kMaxXmlNames levels). No allocation.
XmlScan scanXml(Bytes d) {
  XmlScan s;
  const size_t n = std::min(d.size(), kScanLimit);
  const bool limited = d.size() > kScanLimit;
  size_t i = skipBomAndSpace(d, n);
  auto finish = [&](ScanEnd end, size_t pos) {
    s.end = end;
    s.pos = pos;
    return s;
  };
  auto stop = [&](Token t) {
    return t == Token::Cut ? finish(i >= n && limited ? ScanEnd::Limit : ScanEnd::Truncated, i)
                           : finish(ScanEnd::Invalid, i);
  };
  if (hasAt(d.take_front(n), i, "<?xml") && i + 5 < n && isSpace(d[i + 5])) {
    s.declaration = true;
    const size_t decl = i;
    if (Token t = skipPast(d, std::min(n, i + 512), i, "?>"); t != Token::Ok)
      return stop(t == Token::Cut && i < n ? Token::Bad : t);
    const size_t enc = findLiteralIn(d, decl, i, "encoding=");
    if (enc != Sniffer::kNoCandidate && enc + 10 < i) {
      const uint8_t quote = d[enc + 9];
      size_t e = enc + 10;
      while (e < i && d[e] != quote)
        ++e;
      s.encoding_start = enc + 10;
      s.encoding_len = e - s.encoding_start;
    }
  }
  size_t names[kMaxXmlNames][2];
  unsigned depth = 0;
  bool in_root = false;
  for (;;) {
    // Character data (only whitespace outside the root element).
    while (i < n && d[i] != '<') {
      if (!isXmlTextByte(d[i]) || (!in_root && !isSpace(d[i])))
        return d[i] == 0 ? finish(ScanEnd::Truncated, i) : finish(ScanEnd::Invalid, i);
      ++i;
    }
    if (i >= n)
      return stop(Token::Cut);
    const size_t tag = i;
    Token t = Token::Ok;
    if (hasAt(d.take_front(n), i, "<!--")) {
      i += 4;
      t = skipPast(d, n, i, "-->");
    } else if (hasAt(d.take_front(n), i, "<?")) {
      i += 2;
      t = skipPast(d, n, i, "?>");
    } else if (in_root && hasAt(d.take_front(n), i, "<![CDATA[")) {
      i += 9;
      t = skipPast(d, n, i, "]]>");
    } else if (!in_root && hasAt(d.take_front(n), i, "<!DOCTYPE")) {
      int brackets = 0;
      for (i += 9; i < n; ++i) {
        if (d[i] == '[')
          ++brackets;
        else if (d[i] == ']')
          --brackets;
        else if (d[i] == '>' && brackets <= 0)
          break;
        else if (!isXmlTextByte(d[i]))
          return stop(d[i] == 0 ? Token::Cut : Token::Bad);
      }
      if (i >= n)
        return stop(Token::Cut);
      ++i;
    } else if (in_root && i + 1 < n && d[i + 1] == '/') {
      size_t k = i + 2;
      const size_t name = k;
      while (k < n && isNameChar(d[k]))
        ++k;
      const size_t len = k - name;
      while (k < n && isSpace(d[k]))
        ++k;
      if (k >= n)
        return stop(Token::Cut);
      if (len == 0 || d[k] != '>')
        return finish(ScanEnd::Invalid, tag);
      if (depth <= kMaxXmlNames &&
          (names[depth - 1][1] != len ||
           std::memcmp(d.data() + names[depth - 1][0], d.data() + name, len) != 0))
        return finish(ScanEnd::Invalid, tag);
      i = k + 1;
      if (--depth == 0)
        return finish(ScanEnd::Closed, i);
    } else if (i + 1 < n && isNameStart(d[i + 1])) {
      size_t k = i + 1;
      const size_t name = k;
      while (k < n && isNameChar(d[k]))
        ++k;
      const size_t len = k - name;
      bool empty_element = false;
      for (;;) { // attributes
        const size_t before = k;
        while (k < n && isSpace(d[k]))
          ++k;
        if (k >= n)
          return stop(Token::Cut);
        if (d[k] == '>') {
          ++k;
          break;
        }
        if (d[k] == '/') {
          if (k + 1 >= n)
            return stop(Token::Cut);
          if (d[k + 1] != '>')
            return finish(ScanEnd::Invalid, tag);
          k += 2;
          empty_element = true;
          break;
        }
        if (k == before || !isNameStart(d[k]))
          return finish(ScanEnd::Invalid, tag);
        while (k < n && isNameChar(d[k]))
          ++k;
        while (k < n && isSpace(d[k]))
          ++k;
        if (k < n && d[k] != '=')
          return finish(ScanEnd::Invalid, tag);
        ++k;
        while (k < n && isSpace(d[k]))
          ++k;
        if (k >= n)
          return stop(Token::Cut);
        const uint8_t quote = d[k];
        if (quote != '"' && quote != '\'')
          return finish(ScanEnd::Invalid, tag);
        for (++k; k < n && d[k] != quote; ++k)
          if (d[k] == '<' || !isXmlTextByte(d[k]))
            return d[k] == 0 ? finish(ScanEnd::Truncated, k) : finish(ScanEnd::Invalid, tag);
        if (k >= n)
          return stop(Token::Cut);
        ++k;
      }
      if (!in_root) {
        in_root = true;
        s.root_start = name;
        s.root_len = len;
      }
      i = k;
      if (empty_element) {
        if (depth == 0)
          return finish(ScanEnd::Closed, i);
      } else {
        if (depth < kMaxXmlNames) {
          names[depth][0] = name;
          names[depth][1] = len;
        }
        ++depth;
      }
      continue;
    } else {
      return finish(ScanEnd::Invalid, tag);
    }
    if (t != Token::Ok)
      return stop(t);
  }
}

/// '<' then "?xml", "!--", "!DOCTYPE" or a name start, after a BOM and whitespace.
bool xmlLikeStart(Bytes head) {
  const size_t i = skipBomAndSpace(head, head.size());
  if (i + 1 >= head.size() || head[i] != '<')
    return false;
  const uint8_t c = head[i + 1];
  return c == '?' || c == '!' || isNameStart(c);
}

class XmlSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Xml; }

  bool quickCheck(Bytes head) const override { return xmlLikeStart(head); }

  /// Only the declaration is a strong enough anchor inside a buffer.
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    return findLiteral(buffer, from, limit, "<?xml ");
  }

  /// Well-formed up to the end of the root element (complete), or well-formed so far when the
  /// buffer/scan ends (needs a declaration or 64 valid bytes); damage after kCorruptAfter valid
  /// bytes is corrupt.
  std::optional<SniffResult> validate(Bytes d) const override {
    const XmlScan s = scanXml(d);
    switch (s.end) {
    case ScanEnd::Closed:
      break;
    case ScanEnd::Truncated:
    case ScanEnd::Limit:
      if (!s.declaration && s.pos < 64)
        return std::nullopt;
      break;
    case ScanEnd::Invalid:
      if (s.pos < kCorruptAfter || !s.root_len)
        return std::nullopt;
      break;
    }
    // Past the scan limit the value is not validated; it ends where the text does.
    const uint64_t length = s.end == ScanEnd::Limit ? textEnd(d, s.pos) : s.pos;
    SniffResult r = makeResult(ContentKind::Xml, length, s.end != ScanEnd::Closed);
    r.details.set("declaration", s.declaration);
    if (s.root_len)
      r.details.set("root", printableString(d.slice(s.root_start, s.root_len), 64));
    if (s.encoding_len)
      r.details.set("encoding", printableString(d.slice(s.encoding_start, s.encoding_len), 32));
    r.setComplete(s.end == ScanEnd::Closed);
    r.setTruncated(s.end == ScanEnd::Truncated);
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------------------------

/// How far "</html>" is searched for, and how much of the start must be text.
constexpr size_t kHtmlEndScan = 1u << 20;
constexpr size_t kHtmlTextCheck = 4096;

/// The offset after the XML declaration, comments and whitespace that may precede a doctype,
/// or SIZE_MAX when something else comes first or it runs past `n`.
size_t skipHtmlPreamble(Bytes d, size_t n) {
  size_t i = skipBomAndSpace(d, n);
  for (unsigned items = 0; items < 16; ++items) {
    size_t next = i;
    if (hasAt(d.take_front(n), i, "<?xml"))
      next = findLiteralIn(d, i, n, "?>");
    else if (hasAt(d.take_front(n), i, "<!--"))
      next = findLiteralIn(d, i + 4, n, "-->");
    else
      return i;
    if (next == Sniffer::kNoCandidate)
      return SIZE_MAX;
    i = next + (d[next] == '?' ? 2 : 3);
    while (i < n && isSpace(d[i]))
      ++i;
  }
  return i;
}

/// True when data[i..] opens the document: "<!doctype html" or "<html" + space or '>'.
bool htmlOpensAt(Bytes d, size_t i, bool &doctype) {
  doctype = hasAtNoCase(d, i, "<!doctype html");
  if (doctype)
    return d.size() > i + 14 && (isSpace(d[i + 14]) || d[i + 14] == '>');
  return hasAtNoCase(d, i, "<html") && d.size() > i + 5 && (isSpace(d[i + 5]) || d[i + 5] == '>');
}

/// The first offset of the lowercase or uppercase spelling of `lower` in d[from, end).
size_t findEitherCase(Bytes d, size_t from, size_t end, llvm::StringRef lower,
                      llvm::StringRef upper) {
  return std::min(findLiteralIn(d, from, end, lower), findLiteralIn(d, from, end, upper));
}

class HtmlSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Html; }

  /// Starts like markup; validate looks for the doctype or <html> after any preamble.
  bool quickCheck(Bytes head) const override { return xmlLikeStart(head); }

  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    for (size_t q = findLiteral(buffer, from, limit, "<"); q != kNoCandidate;
         q = findLiteral(buffer, q + 1, limit, "<")) {
      bool doctype = false;
      if (htmlOpensAt(buffer, q, doctype))
        return q;
    }
    return kNoCandidate;
  }

  /// The doctype or <html> tag, text without control bytes in the first 4 KiB, and "</html>"
  /// (searched within 1 MiB) as the end; a NUL before it ends the document early (truncated).
  std::optional<SniffResult> validate(Bytes d) const override {
    const size_t start = skipHtmlPreamble(d, std::min(d.size(), kHtmlTextCheck));
    bool doctype = false;
    if (start == SIZE_MAX || !htmlOpensAt(d, start, doctype))
      return std::nullopt;
    const size_t check = std::min(d.size(), kHtmlTextCheck);
    size_t text_end = d.size();
    for (size_t i = 0; i < check; ++i) {
      if (d[i] == 0) {
        text_end = i;
        break;
      }
      if (d[i] < 0x20 && !isSpace(d[i]) && d[i] != '\f')
        return std::nullopt;
    }
    if (text_end == d.size() && d.size() > check) {
      const void *nul = std::memchr(d.data() + check, 0, std::min(d.size(), kHtmlEndScan) - check);
      if (nul)
        text_end = static_cast<size_t>(static_cast<const uint8_t *>(nul) - d.data());
    }
    const size_t scan_end = std::min(text_end, kHtmlEndScan);
    const size_t close = findEitherCase(d, start, scan_end, "</html>", "</HTML>");
    const bool complete = close != kNoCandidate;
    const uint64_t length = complete ? close + 7 : text_end;
    SniffResult r = makeResult(ContentKind::Html, length, !complete);
    r.details.set("doctype", doctype);
    const size_t title =
        findEitherCase(d, start, std::min(scan_end, kHtmlTextCheck * 4), "<title", "<TITLE");
    if (title != kNoCandidate) {
      const size_t gt = findLiteralIn(d, title, std::min(scan_end, title + 256), ">");
      if (gt != kNoCandidate) {
        const size_t lt = findLiteralIn(d, gt, std::min(scan_end, gt + 1024), "<");
        if (lt != kNoCandidate)
          r.details.set("title", printableString(d.slice(gt + 1, lt - gt - 1), 120));
      }
    }
    r.setComplete(complete);
    r.setTruncated(!complete && text_end < d.size());
    return r;
  }
};

} // namespace

std::unique_ptr<Sniffer> makeHttpSniffer() {
  return std::make_unique<HttpSniffer>();
}
std::unique_ptr<Sniffer> makeJsonSniffer() {
  return std::make_unique<JsonSniffer>();
}
std::unique_ptr<Sniffer> makeXmlSniffer() {
  return std::make_unique<XmlSniffer>();
}
std::unique_ptr<Sniffer> makeHtmlSniffer() {
  return std::make_unique<HtmlSniffer>();
}

} // namespace dumpsift::sniffimpl

namespace dumpsift {

std::optional<uint64_t> closedJsonValueLength(llvm::ArrayRef<uint8_t> data, uint64_t limit) {
  if (data.empty() || (data[0] != '{' && data[0] != '['))
    return std::nullopt;
  const sniffimpl::JsonScan s = sniffimpl::scanJson(data, limit);
  if (s.end != sniffimpl::ScanEnd::Closed)
    return std::nullopt;
  return s.pos;
}

} // namespace dumpsift
