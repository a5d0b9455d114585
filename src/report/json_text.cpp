// JSON text for the report layer's readers (json_text.h).
#include "json_text.h"

#include "dumpsift/support/error.h"

#include <iterator>
#include <vector>

namespace dumpsift::detail {

namespace {

/// An input iterator over characters that counts the newlines it has moved past, except in the
/// last character it moved past: when nlohmann's SAX parser reports a token, that last character
/// is the token's own last one, or (after a number) the delimiter the lexer looked ahead at, so
/// the count gives the token's line either way (no JSON token holds a raw newline).
class LineCountingIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  LineCountingIterator(const char *at, size_t *newlines, char *last)
      : at_(at), newlines_(newlines), last_(last) {}
  reference operator*() const { return *at_; }
  LineCountingIterator &operator++() {
    if (*last_ == '\n')
      ++*newlines_;
    *last_ = *at_++;
    return *this;
  }
  bool operator==(const LineCountingIterator &other) const { return at_ == other.at_; }
  bool operator!=(const LineCountingIterator &other) const { return at_ != other.at_; }

private:
  const char *at_;
  size_t *newlines_; // shared by the copies the parser makes
  char *last_;
};

/// Records the line of every value and member key as nlohmann's parser meets them.
class LineRecorder final : public nlohmann::json_sax<Json> {
public:
  explicit LineRecorder(const size_t &newlines) : newlines_(newlines) {}
  std::map<std::string, size_t> lines;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t &) override { return value(); }
  bool string(string_t &) override { return value(); }
  bool binary(binary_t &) override { return value(); }
  bool start_object(std::size_t) override { return open(/*object=*/true); }
  bool start_array(std::size_t) override { return open(/*object=*/false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t &key) override {
    Frame &f = stack_.back();
    f.key = key;
    lines.emplace(jsonPointerChild(f.pointer, f.key), line());
    return true;
  }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override {
    return false; // the text was parsed before: nothing to add
  }

private:
  struct Frame {
    bool object = false;
    std::string pointer; // the container's own
    size_t index = 0;    // arrays: the next element's index
    std::string key;     // objects: the current member's key
  };

  size_t line() const { return newlines_ + 1; }
  /// The pointer of the value that starts now, which is recorded (a member's was, at its key).
  std::string valuePointer() {
    if (stack_.empty())
      return "";
    Frame &f = stack_.back();
    return f.object ? jsonPointerChild(f.pointer, f.key) : jsonPointerChild(f.pointer, f.index++);
  }
  bool value() {
    lines.emplace(valuePointer(), line());
    return true;
  }
  bool open(bool object) {
    std::string pointer = valuePointer();
    lines.emplace(pointer, line());
    stack_.push_back({object, std::move(pointer), 0, ""});
    return true;
  }
  bool close() {
    if (!stack_.empty())
      stack_.pop_back();
    return true;
  }

  const size_t &newlines_;
  std::vector<Frame> stack_;
};

} // namespace

std::pair<size_t, size_t> lineAndColumn(llvm::StringRef text, size_t offset) {
  offset = std::min(offset, text.size());
  llvm::StringRef head = text.take_front(offset);
  size_t line = 1 + static_cast<size_t>(head.count('\n'));
  size_t last_newline = head.rfind('\n');
  size_t column = last_newline == llvm::StringRef::npos ? offset + 1 : offset - last_newline;
  return {line, column};
}

llvm::Expected<Json> parseJsonText(llvm::StringRef text) {
  // nlohmann reports syntax errors only by exception; this is the one place that catches it.
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &e) {
    // e.byte is the 1-based index of the last byte read: the offending one.
    auto [line, column] = lineAndColumn(text, e.byte ? e.byte - 1 : 0);
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: WHY".
    std::string why = e.what();
    size_t colon = why.find(": ", why.find("parse error"));
    if (colon != std::string::npos)
      why = why.substr(colon + 2);
    return createError("line " + llvm::Twine(line) + ", column " + llvm::Twine(column) + ": " +
                       why);
  }
}

std::string jsonPointerChild(const std::string &pointer, llvm::StringRef key) {
  return (Json::json_pointer(pointer) / key.str()).to_string();
}

std::string jsonPointerChild(const std::string &pointer, size_t index) {
  return (Json::json_pointer(pointer) / index).to_string();
}

std::map<std::string, size_t> jsonPointerLines(llvm::StringRef text) {
  size_t newlines = 0;
  char last = '\0';
  LineRecorder recorder(newlines);
  Json::sax_parse(LineCountingIterator(text.begin(), &newlines, &last),
                  LineCountingIterator(text.end(), &newlines, &last), &recorder);
  return std::move(recorder.lines);
}

std::optional<uint64_t> jsonCount(const Json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::string jsonTypeWords(const Json &value) {
  if (value.is_number_integer())
    return jsonCount(value) ? "a number" : "a negative number";
  if (value.is_number_float())
    return "a fractional number";
  switch (value.type()) {
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::null:
    return "null";
  default:
    return "a value";
  }
}

} // namespace dumpsift::detail
