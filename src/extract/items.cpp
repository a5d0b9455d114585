// What a buffer yields as files: the buffer's bytes, and the payloads its kind's sniffer decodes
// (Sniffer::decodePayloads, for the kinds whose kindFacts say they carry payloads). Everything is a
// view into the mapped dump; nothing is copied here except a bounded window for sniffing a payload
// made of several pieces.
#include "dumpsift/extract/extract.h"
#include "dumpsift/support/hex.h"
#include "pieces.h"

#include <algorithm>
#include <cassert>

namespace dumpsift {

namespace {

using Bytes = llvm::ArrayRef<uint8_t>;

/// A payload in several pieces is sniffed from a copy of at most this many of its first bytes.
constexpr uint64_t kPayloadSniffWindow = 4u << 20;

/// "<address>-<size>[.<infix>].<ext>": digits, letters, '-' and '.', never a path separator.
std::string fileName(uint64_t address, uint64_t size, llvm::StringRef infix, ContentKind kind) {
  std::string name = hexAddress(address) + "-" + std::to_string(size);
  if (!infix.empty())
    name += "." + infix.str();
  name += "." + kindExtension(kind).str();
  assert(name.find('/') == std::string::npos && name.front() != '.');
  return name;
}

/// What the joined pieces hold. One piece is sniffed in place; several are sniffed from a copy of
/// their first kPayloadSniffWindow bytes (the details then describe that window, which they say).
SniffResult sniffPieces(llvm::ArrayRef<Bytes> pieces) {
  if (pieces.size() == 1)
    return sniff(pieces.front());
  std::vector<uint8_t> window;
  const uint64_t total = totalSize(pieces);
  window.reserve(std::min(total, kPayloadSniffWindow));
  for (Bytes piece : pieces) {
    const size_t take = std::min<uint64_t>(piece.size(), kPayloadSniffWindow - window.size());
    window.insert(window.end(), piece.begin(), piece.begin() + take);
    if (window.size() == kPayloadSniffWindow)
      break;
  }
  SniffResult result = sniff(window);
  if (total > window.size())
    result.details.set("sniffed_bytes", uint64_t(window.size()));
  return result;
}

/// A Payload or Body item of `parent` made of `pieces` (views into `frame`, which starts
/// `frame_offset` bytes after the allocation address).
ExtractItem decodedItem(const ExtractedFile &parent, Bytes frame, uint64_t frame_offset,
                        ExtractRole role, unsigned body, std::vector<Bytes> pieces, bool cut) {
  ExtractItem item;
  ExtractedFile &f = item.file;
  f.role = role;
  f.body = body;
  f.address = parent.address;
  f.state = parent.state;
  f.offset = frame_offset + static_cast<uint64_t>(pieces.front().data() - frame.data());
  f.size = totalSize(pieces);
  f.pieces = pieces.size();
  SniffResult content = sniffPieces(pieces);
  f.kind = content.kind;
  f.truncated = cut || content.truncated.value_or(false);
  f.details = std::move(content.details);
  if (content.offset)
    f.details.set("content_offset", content.offset);
  const std::string infix =
      role == ExtractRole::Payload ? "payload" : "body" + std::to_string(body);
  f.name = fileName(f.address, f.size, infix, f.kind);
  item.pieces = std::move(pieces);
  return item;
}

} // namespace

llvm::StringRef roleName(ExtractRole role) {
  switch (role) {
  case ExtractRole::Buffer:
    return "buffer";
  case ExtractRole::Payload:
    return "payload";
  case ExtractRole::Body:
    return "body";
  }
  return "buffer";
}

std::vector<ExtractItem> extractItems(const AddressSpace &memory, const Buffer &buffer, bool raw,
                                      bool decode) {
  std::vector<ExtractItem> items;
  const Allocation &a = buffer.allocation;
  const SniffResult &content = buffer.content;
  const Bytes payload = capturedPayload(memory, buffer);

  ExtractItem main;
  ExtractedFile &f = main.file;
  f.address = a.address;
  f.state = a.state;
  f.kind = content.kind;
  f.details = content.details;
  const bool cut = content.truncated.value_or(false);
  Bytes bytes;
  if (raw) {
    const uint64_t run = std::min(memory.capturedRunFrom(a.address), a.size);
    if (run)
      bytes = Bytes(memory.tryView(a.address, run), run);
    f.offset = 0;
    f.truncated = cut || run < a.size;
  } else {
    const uint64_t extent =
        buffer.payloadSize() > content.offset ? buffer.payloadSize() - content.offset : 0;
    // Stale bytes behind the content in a reused buffer are extracted with it, so the file shows
    // what the content was written over.
    const uint64_t length = content.length ? content.length + content.stale_bytes.value_or(0) : 0;
    const uint64_t want = length ? std::min(length, extent) : extent;
    const uint64_t start = std::min<uint64_t>(content.offset, payload.size());
    const uint64_t have = std::min<uint64_t>(want, payload.size() - start);
    bytes = payload.slice(start, have);
    f.offset = a.data_offset + content.offset;
    f.truncated = cut || have < want;
  }
  if (!bytes.empty()) {
    f.size = bytes.size();
    f.name = fileName(f.address, f.size, "", f.kind);
    main.pieces.push_back(bytes);
    items.push_back(std::move(main));
  }

  if (!decode || payload.size() <= content.offset)
    return items;
  // The framing starts at the content's offset and runs to the end of what the dump holds, as the
  // sniffer saw it.
  const Bytes frame = payload.drop_front(content.offset);
  const uint64_t frame_offset = a.data_offset + content.offset;
  const Sniffer *sniffer = snifferFor(content.kind);
  if (!sniffer)
    return items;
  ExtractedFile parent;
  parent.address = a.address;
  parent.state = a.state;
  unsigned bodies = 0;
  for (Payload &p : sniffer->decodePayloads(frame))
    items.push_back(decodedItem(parent, frame, frame_offset,
                                p.message_body ? ExtractRole::Body : ExtractRole::Payload,
                                p.message_body ? ++bodies : 0, std::move(p.pieces), p.cut));
  return items;
}

} // namespace dumpsift
