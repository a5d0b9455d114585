// AMQP 0-9-1 frames: the parser behind parseAmqp/amqpBodies (framing.h) and the amqp sniffer.
// A frame is type u8, channel u16 BE, size u32 BE, payload, frame-end 0xCE; method frames start
// with class-id/method-id u16 BE, content header frames with class-id, weight (0), body-size u64
// BE and property flags u16 (bit 15: content-type shortstr first).
#include "common.h"
#include "dumpsift/sniff/framing.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>

namespace dumpsift {

using namespace sniffimpl;

namespace {

constexpr llvm::StringRef kProtocolHeader("AMQP\0\0\x09\x01", 8);
constexpr uint8_t kFrameEnd = 0xCE;
/// Type, channel and payload size: the bytes before a frame's payload.
constexpr size_t kFrameHeaderBytes = 7;
constexpr uint8_t kMethod = 1, kHeader = 2, kBody = 3, kHeartbeat = 8;
/// Frames above this size are not believed (frame_max is negotiated; brokers use up to 128 KiB,
/// and a few MiB at most).
constexpr uint32_t kMaxFrameSize = 64u << 20;
constexpr uint16_t kBasicClass = 60;

struct MethodName {
  uint16_t class_id, method_id;
  const char *name;
};
// AMQP 0-9-1 method table (including RabbitMQ's extensions: confirm, basic.nack, exchange.bind,
// connection.blocked/update-secret).
constexpr MethodName kMethods[] = {
    {10, 10, "connection.start"},
    {10, 11, "connection.start-ok"},
    {10, 20, "connection.secure"},
    {10, 21, "connection.secure-ok"},
    {10, 30, "connection.tune"},
    {10, 31, "connection.tune-ok"},
    {10, 40, "connection.open"},
    {10, 41, "connection.open-ok"},
    {10, 50, "connection.close"},
    {10, 51, "connection.close-ok"},
    {10, 60, "connection.blocked"},
    {10, 61, "connection.unblocked"},
    {10, 70, "connection.update-secret"},
    {10, 71, "connection.update-secret-ok"},
    {20, 10, "channel.open"},
    {20, 11, "channel.open-ok"},
    {20, 20, "channel.flow"},
    {20, 21, "channel.flow-ok"},
    {20, 40, "channel.close"},
    {20, 41, "channel.close-ok"},
    {40, 10, "exchange.declare"},
    {40, 11, "exchange.declare-ok"},
    {40, 20, "exchange.delete"},
    {40, 21, "exchange.delete-ok"},
    {40, 30, "exchange.bind"},
    {40, 31, "exchange.bind-ok"},
    {40, 40, "exchange.unbind"},
    {40, 51, "exchange.unbind-ok"},
    {50, 10, "queue.declare"},
    {50, 11, "queue.declare-ok"},
    {50, 20, "queue.bind"},
    {50, 21, "queue.bind-ok"},
    {50, 30, "queue.purge"},
    {50, 31, "queue.purge-ok"},
    {50, 40, "queue.delete"},
    {50, 41, "queue.delete-ok"},
    {50, 50, "queue.unbind"},
    {50, 51, "queue.unbind-ok"},
    {60, 10, "basic.qos"},
    {60, 11, "basic.qos-ok"},
    {60, 20, "basic.consume"},
    {60, 21, "basic.consume-ok"},
    {60, 30, "basic.cancel"},
    {60, 31, "basic.cancel-ok"},
    {60, 40, "basic.publish"},
    {60, 50, "basic.return"},
    {60, 60, "basic.deliver"},
    {60, 70, "basic.get"},
    {60, 71, "basic.get-ok"},
    {60, 72, "basic.get-empty"},
    {60, 80, "basic.ack"},
    {60, 90, "basic.reject"},
    {60, 100, "basic.recover-async"},
    {60, 110, "basic.recover"},
    {60, 111, "basic.recover-ok"},
    {60, 120, "basic.nack"},
    {85, 10, "confirm.select"},
    {85, 11, "confirm.select-ok"},
    {90, 10, "tx.select"},
    {90, 11, "tx.select-ok"},
    {90, 20, "tx.commit"},
    {90, 21, "tx.commit-ok"},
    {90, 30, "tx.rollback"},
    {90, 31, "tx.rollback-ok"},
};

enum class FrameStatus : uint8_t { Whole, Cut, Bad };

/// The bytes after content of `content_end` bytes, to the end of a buffer of `buffer_size`, are
/// no more than an allocator's rounding of the request: under 8 KiB (glibc's chunk alignment and
/// page-rounded mmapped chunks, tcmalloc's pages) or a quarter of the content (size classes four
/// to a doubling, as jemalloc's, are the coarsest).
bool fillsAllocation(size_t content_end, size_t buffer_size) {
  constexpr size_t kPageSlack = 8192;
  const size_t tail = buffer_size - content_end;
  return tail < kPageSlack || tail <= content_end / 4;
}

const char *frameTypeName(uint8_t type) {
  switch (type) {
  case kMethod:
    return "method";
  case kHeader:
    return "header";
  case kBody:
    return "body";
  default:
    return "heartbeat";
  }
}

/// Checks the frame at `p`: a known type, plausible payload start for its type, and (when the
/// whole frame is inside the buffer) the frame-end byte. Cut means plausible but incomplete.
FrameStatus checkFrame(Bytes d, size_t p, AmqpFrame &frame) {
  const size_t avail = d.size() - p;
  if (avail == 0)
    return FrameStatus::Bad;
  const uint8_t type = d[p];
  if (type != kMethod && type != kHeader && type != kBody && type != kHeartbeat)
    return FrameStatus::Bad;
  if (avail < kFrameHeaderBytes)
    return FrameStatus::Cut;
  frame.type = type;
  frame.channel = read16be(d.data() + p + 1);
  frame.size = read32be(d.data() + p + 3);
  frame.offset = p;
  if (frame.size > kMaxFrameSize)
    return FrameStatus::Bad;
  const uint8_t *pl = d.data() + p + kFrameHeaderBytes;
  const size_t pl_avail = avail - kFrameHeaderBytes;
  switch (type) {
  case kHeartbeat:
    if (frame.channel != 0 || frame.size != 0)
      return FrameStatus::Bad;
    break;
  case kMethod:
    if (frame.size < 4)
      return FrameStatus::Bad;
    if (pl_avail >= 4 && amqpMethodName(read16be(pl), read16be(pl + 2)).empty())
      return FrameStatus::Bad;
    break;
  case kHeader:
    if (frame.size < 14 || frame.channel == 0)
      return FrameStatus::Bad;
    if (pl_avail >= 4 && (read16be(pl) != kBasicClass || read16be(pl + 2) != 0))
      return FrameStatus::Bad;
    break;
  default: // body
    if (frame.channel == 0)
      return FrameStatus::Bad;
    break;
  }
  if (pl_avail < uint64_t(frame.size) + 1)
    return FrameStatus::Cut;
  return pl[frame.size] == kFrameEnd ? FrameStatus::Whole : FrameStatus::Bad;
}

/// Node's Buffer.allocUnsafe hands out 8-byte aligned slices of a shared 8 KiB pool, so a client
/// that writes each message's method and header frames with it (amqplib) leaves up to 7 bytes of
/// padding between them.
constexpr size_t kPoolAlignment = 8;

/// The frame after a pool's padding: a whole method or content header frame at the first multiple
/// of kPoolAlignment past `end`, when `end` is not one.
std::optional<AmqpFrame> frameAfterPadding(Bytes d, size_t end) {
  const size_t aligned = llvm::alignTo(end, kPoolAlignment);
  AmqpFrame frame;
  if (aligned == end || aligned >= d.size() ||
      checkFrame(d, aligned, frame) != FrameStatus::Whole ||
      (frame.type != kMethod && frame.type != kHeader))
    return std::nullopt;
  return frame;
}

/// How many method frames of a buffer carry one method.
struct MethodCount {
  uint16_t class_id, method_id;
  uint64_t frames;
};

/// Counts one method frame in `methods` (at most one entry per method of the table: checkFrame
/// rejects ids outside it).
void countMethod(std::vector<MethodCount> &methods, uint16_t class_id, uint16_t method_id) {
  for (MethodCount &m : methods)
    if (m.class_id == class_id && m.method_id == method_id) {
      ++m.frames;
      return;
    }
  methods.push_back({class_id, method_id, 1});
}

/// Walks frames from data[0] into `layout` (an empty layout when not AMQP). No allocation when
/// the first frame is rejected.
bool walkAmqp(Bytes d, AmqpLayout &layout) {
  std::vector<MethodCount> methods;
  size_t p = 0;
  if (startsWith(d, kProtocolHeader)) {
    layout.protocol_header = true;
    p = kProtocolHeader.size();
    layout.length = p;
  }
  AmqpFrame frame;
  FrameStatus status = checkFrame(d, p, frame);
  if (status != FrameStatus::Whole && !layout.protocol_header)
    return false;
  if (status == FrameStatus::Whole && frame.type == kBody && !layout.protocol_header) {
    // A body frame's header is weak (docs/kinds.md, amqp): believe it when a valid frame follows
    // it, or when it fills its buffer, as a client's buffer of one body frame does.
    AmqpFrame next;
    const size_t end = p + 8 + size_t(frame.size);
    if (checkFrame(d, end, next) != FrameStatus::Whole &&
        !(frame.size > 0 && fillsAllocation(end, d.size())))
      return false;
  }
  while (status == FrameStatus::Whole && layout.frames.size() < AmqpLayout::kMaxFrames) {
    layout.frames.push_back(frame);
    const uint8_t *pl = d.data() + p + kFrameHeaderBytes;
    if (frame.type == kMethod) {
      countMethod(methods, read16be(pl), read16be(pl + 2));
    } else if (frame.type == kHeader && !layout.body_size) {
      layout.body_size = read64be(pl + 4);
      const uint16_t flags = read16be(pl + 12);
      if ((flags & 0x8000) && frame.size >= 15 && frame.size >= 15u + pl[14])
        layout.content_type = printableString(Bytes(pl + 15, pl[14]), 255);
    }
    p += 8 + size_t(frame.size);
    layout.length = p;
    status = p < d.size() ? checkFrame(d, p, frame) : FrameStatus::Bad;
    if (status != FrameStatus::Whole)
      if (std::optional<AmqpFrame> after = frameAfterPadding(d, p)) {
        layout.padding_bytes += after->offset - p;
        p = after->offset;
        frame = *after;
        status = FrameStatus::Whole;
      }
  }
  layout.truncated = status == FrameStatus::Cut;
  for (const MethodCount &m : methods) // in order of first appearance: the first wins a tie
    if (m.frames > layout.method_frames) {
      layout.class_id = m.class_id;
      layout.method_id = m.method_id;
      layout.method_frames = m.frames;
    }
  return true;
}

class AmqpSniffer final : public Sniffer {
public:
  ContentKind kind() const override { return ContentKind::Amqp; }

  /// The protocol header, or a frame header of a known type whose first payload bytes fit it.
  bool quickCheck(Bytes head) const override {
    if (startsWith(head, kProtocolHeader))
      return true;
    if (head.size() < 8)
      return false;
    AmqpFrame frame;
    return checkFrame(head, 0, frame) != FrameStatus::Bad;
  }

  /// The region scan tries the protocol header and method frames: a method frame's class and
  /// method ids must be one of the table's 65 pairs and its frame-end byte must follow its
  /// payload, about one chance in 2^40 for bytes that are not AMQP. Content header and body
  /// frames alone are too weak to be believed at any offset.
  llvm::StringRef scanLeadBytes() const override { return llvm::StringRef("A\x01", 2); }

  /// A body frame is no lead of its own (its first byte is common and it has no magic), but its
  /// payload (a JPEG, JSON) may be: the body frame around memory[at] when the 7 bytes before it
  /// are a body frame's header (type 3, a channel other than 0, a size other than 0) and the
  /// frame-end byte is where that size says. So a stale copy of a client's frame in memory no
  /// walker claims is reported as the frame it is.
  std::optional<ByteSpan> frameAround(Bytes memory, size_t at) const override {
    if (at < kFrameHeaderBytes || at >= memory.size())
      return std::nullopt;
    const uint8_t *header = memory.data() + at - kFrameHeaderBytes;
    const uint16_t channel = read16be(header + 1);
    const uint32_t size = read32be(header + 3);
    if (header[0] != kBody || channel == 0 || size == 0 || size >= memory.size() - at ||
        memory[at + size] != kFrameEnd)
      return std::nullopt;
    return ByteSpan{at - kFrameHeaderBytes, kFrameHeaderBytes + uint64_t(size) + 1};
  }

  /// The protocol header, or a method frame of the basic class (publish, deliver, ...): class 60
  /// at +7 and frame type 1 at +0.
  size_t findCandidate(Bytes buffer, size_t from, size_t limit) const override {
    size_t best = findLiteral(buffer, from, limit, kProtocolHeader);
    const llvm::StringRef basic("\x00\x3c\x00", 3);
    for (size_t q = findLiteral(buffer, from + 7, std::min(limit, best) + 7, basic);
         q != kNoCandidate; q = findLiteral(buffer, q + 1, std::min(limit, best) + 7, basic)) {
      if (buffer[q - 7] == kMethod) {
        best = std::min(best, q - 7);
        break;
      }
    }
    return best;
  }

  /// At least one whole valid frame (or the protocol header). The payload is sniffed from the
  /// first body frame.
  std::optional<SniffResult> validate(Bytes data) const override {
    AmqpFrame probe;
    if (!startsWith(data, kProtocolHeader) && checkFrame(data, 0, probe) != FrameStatus::Whole)
      return std::nullopt; // the common reject: no allocation
    std::optional<AmqpLayout> layout = parseAmqp(data);
    if (!layout)
      return std::nullopt;
    SniffResult r = makeResult(ContentKind::Amqp, layout->length, layout->truncated);
    r.details.set("protocol_header", layout->protocol_header);
    r.details.set("frame_count", uint64_t(layout->frames.size()));
    if (!layout->frames.empty()) {
      r.details.set("first_frame", std::string(frameTypeName(layout->frames.front().type)));
      r.details.set("channel", uint64_t(layout->frames.front().channel));
    }
    if (layout->class_id) {
      r.details.set("method", amqpMethodName(layout->class_id, layout->method_id).str());
      r.details.set("method_id",
                    std::to_string(layout->class_id) + "/" + std::to_string(layout->method_id));
      r.details.set("method_frames", layout->method_frames);
    }
    uint64_t body_bytes = 0;
    const AmqpFrame *first_body = nullptr;
    for (const AmqpFrame &frame : layout->frames)
      if (frame.type == kBody) {
        body_bytes += frame.size;
        if (!first_body)
          first_body = &frame;
      }
    if (layout->body_size) {
      r.details.set("body_size", *layout->body_size);
      r.setComplete(body_bytes >= *layout->body_size);
    }
    r.details.set("body_bytes", body_bytes);
    if (!layout->content_type.empty())
      r.details.set("content_type", layout->content_type);
    r.setTruncated(layout->truncated);
    if (layout->padding_bytes)
      r.details.set("padding_bytes", layout->padding_bytes);
    if (first_body) {
      if (std::optional<ContentKind> payload =
              nestedKind(data.slice(first_body->offset + kFrameHeaderBytes, first_body->size)))
        r.setPayloadKind(*payload);
    }
    return r;
  }

  /// One payload per message: a content header frame starts a message on its channel, body frames
  /// on that channel join it, a method frame on the channel ends it (body frames with no header
  /// before them start a message of their own). The clipped body frame that amqpBodies() may list
  /// last joins the message that took the last content frame, which is then cut. Messages with no
  /// body bytes are left out.
  std::vector<Payload> decodePayloads(Bytes data) const override {
    std::vector<Payload> messages;
    std::optional<AmqpLayout> layout = parseAmqp(data);
    if (!layout)
      return messages;
    const std::vector<Bytes> bodies = amqpBodies(data);
    std::map<uint16_t, size_t> open; // channel -> message taking its body frames
    std::optional<size_t> last;      // the message that took the last content frame
    size_t next_body = 0;
    auto start = [&](uint16_t channel) {
      messages.emplace_back().message_body = true;
      open[channel] = messages.size() - 1;
      return messages.size() - 1;
    };
    for (const AmqpFrame &frame : layout->frames) {
      if (frame.type == kMethod) {
        open.erase(frame.channel);
        last.reset();
      } else if (frame.type == kHeader) {
        last = start(frame.channel);
      } else if (frame.type == kBody && next_body < bodies.size()) {
        auto it = open.find(frame.channel);
        const size_t m = it != open.end() ? it->second : start(frame.channel);
        messages[m].pieces.push_back(bodies[next_body++]);
        last = m;
      }
    }
    if (next_body < bodies.size()) {
      if (!last) {
        messages.emplace_back().message_body = true;
        last = messages.size() - 1;
      }
      messages[*last].pieces.push_back(bodies[next_body]);
      messages[*last].cut = true;
    }
    std::erase_if(messages, [](const Payload &m) {
      return std::all_of(m.pieces.begin(), m.pieces.end(), [](Bytes p) { return p.empty(); });
    });
    return messages;
  }
};

} // namespace

llvm::StringRef amqpMethodName(uint16_t class_id, uint16_t method_id) {
  for (const MethodName &m : kMethods)
    if (m.class_id == class_id && m.method_id == method_id)
      return m.name;
  return "";
}

std::optional<AmqpLayout> parseAmqp(llvm::ArrayRef<uint8_t> data) {
  AmqpLayout layout;
  if (!walkAmqp(data, layout))
    return std::nullopt;
  return layout;
}

std::vector<llvm::ArrayRef<uint8_t>> amqpBodies(llvm::ArrayRef<uint8_t> data) {
  std::vector<llvm::ArrayRef<uint8_t>> bodies;
  std::optional<AmqpLayout> layout = parseAmqp(data);
  if (!layout)
    return bodies;
  for (const AmqpFrame &frame : layout->frames)
    if (frame.type == kBody)
      bodies.push_back(data.slice(frame.offset + 7, frame.size));
  if (layout->truncated && data.size() - layout->length >= 7 && data[layout->length] == kBody) {
    const size_t start = layout->length + 7;
    bodies.push_back(
        data.slice(start, std::min<uint64_t>(read32be(data.data() + layout->length + 3),
                                             data.size() - start)));
  }
  return bodies;
}

namespace sniffimpl {
std::unique_ptr<Sniffer> makeAmqpSniffer() {
  return std::make_unique<AmqpSniffer>();
}
} // namespace sniffimpl

} // namespace dumpsift
