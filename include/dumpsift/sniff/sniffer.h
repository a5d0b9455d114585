// Sniffers: say what a buffer holds. Each has a cheap check on the first bytes and a full
// validation run only on a hit. Every kind is one row of one table (dumpsift/sniff/kinds.def): its
// enum value, report name, file extension, the facts its consumers read (kinds.h) and its sniffer;
// the registry (src/sniff/registry.cpp) is the only code that reads it, and everything else asks
// the registry.
#pragma once

#include "dumpsift/sniff/kinds.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dumpsift {

using DetailValue =
    std::variant<bool, int64_t, uint64_t, double, std::string, std::vector<uint64_t>>;

/// Ordered key/value facts about content ("width": 640). Keys are snake_case and documented in
/// docs/kinds.md.
struct Details {
  std::vector<std::pair<std::string, DetailValue>> entries;
  void set(std::string key, DetailValue value);
  const DetailValue *get(llvm::StringRef key) const;
};

/// The message body that content holding a head of its own carries (http): where it starts and
/// what it is.
struct MessageBody {
  uint64_t offset = 0;             // from the content's start: the head's length ("head_length")
  std::optional<ContentKind> kind; // the body sniffed ("body_kind"); none when it is empty
  /// A transfer coding applies ("transfer_encoding"): the bytes are not the body's own (chunked).
  bool transfer_coded = false;
};

struct SniffResult {
  ContentKind kind = ContentKind::Unknown;
  uint64_t offset = 0; // where the content starts inside the buffer
  uint64_t length = 0; // content length from `offset` (the format's own extent where known)
  bool length_estimated = false;
  /// Bytes from `offset` that the format's own structure accounts for (segments skipped by their
  /// declared lengths, chunks whose declared size lands where the format says), even where
  /// `length` is an estimate: content found inside them belongs to this content (a thumbnail in a
  /// JPEG's APP1 segment), content found after them is content of its own. 0: none vouched for.
  uint64_t structure_length = 0;

  // The facts the pipeline reads, typed; unset where the kind does not report them. Each is
  // also a detail of the same name, for the report: the setters below set both (`body`: the http
  // sniffer sets it with its details head_length, transfer_encoding and body_kind).
  std::optional<bool> complete;            // the format's end is inside the buffer
  std::optional<bool> truncated;           // the buffer ends before the content does
  std::optional<bool> final_chunk;         // chunked framing: the zero-size last chunk was seen
  std::optional<ContentKind> payload_kind; // of the (first) payload the content carries
  std::optional<uint64_t> stale_bytes;     // behind a complete frame in a reused buffer
  std::optional<MessageBody> body;         // a head's message body, when the head is complete
  uint64_t width = 0, height = 0;          // an image's size in pixels; 0 when not known

  /// Report details: every typed fact above and the sniffer's other facts, in the order set.
  Details details;

  /// Each sets its field and the detail of the same name (payload_kind: the kind's name).
  void setComplete(bool value);
  void setTruncated(bool value);
  void setFinalChunk(bool value);
  void setPayloadKind(ContentKind value);
  void setStaleBytes(uint64_t value);
  void setDimensions(uint64_t image_width, uint64_t image_height); // "width", "height"

  /// The content is cut by the end of the buffer, as the kind reports it: `truncated` where the
  /// kind reports it (an aws-chunked slice of whole chunks is not complete, but not cut either),
  /// else not `complete`; false when it reports neither.
  bool cut() const { return truncated ? *truncated : complete && !*complete; }

  /// How many bytes from `offset` hold no reference of the process (no word there is a pointer
  /// it keeps): the data of a format its sniffer parsed (where `length` is an estimate, only the
  /// bytes its structure accounts for), text, or zeros checked in full. 0 when the bytes were
  /// judged on samples (random, zeros of a large buffer) or not known (unknown). The holders pass
  /// does not read them (docs/holders.md).
  uint64_t referenceFreeLength() const;
};

/// A payload that framed content carries, decoded: its pieces in order, as views into the content.
struct Payload {
  /// True for one message's body among the messages the content carries (amqp), which are
  /// numbered from 1 in order; false for the one payload the framing wraps (aws-chunked: the data
  /// of its chunks).
  bool message_body = false;
  std::vector<llvm::ArrayRef<uint8_t>> pieces; // never all empty
  bool cut = false;                            // the content ends inside the payload
};

/// Bytes of a buffer or of memory: where they start and how many.
struct ByteSpan {
  uint64_t offset = 0, length = 0;
};

class Sniffer {
public:
  virtual ~Sniffer() = default;
  virtual ContentKind kind() const = 0;
  /// Cheap: could `head` (the first bytes of candidate content, up to kHeadBytes) start this kind?
  virtual bool quickCheck(llvm::ArrayRef<uint8_t> head) const = 0;
  /// Full validation of content starting at data[0]. Never reads outside `data`, bounds its work,
  /// never throws. nullopt when it is not this kind after all.
  virtual std::optional<SniffResult> validate(llvm::ArrayRef<uint8_t> data) const = 0;
  /// Embedded search: the first offset in [from, limit) of `buffer` where this kind's signature
  /// occurs (the signature bytes may extend past `limit`), or kNoCandidate. Only kinds with a
  /// strong signature override it; the default means "recognised at offset 0 only". Cheap
  /// (memchr/memmem), no allocation. sniff() still runs quickCheck and validate on each candidate.
  virtual size_t findCandidate(llvm::ArrayRef<uint8_t> buffer, size_t from, size_t limit) const {
    (void)buffer, (void)from, (void)limit;
    return kNoCandidate;
  }
  /// The region scan, which looks for content at every offset of memory no heap walker claims,
  /// asks each kind whose signature is strong enough to be believed anywhere for the bytes its
  /// content can start with; other kinds (the default) take no part. quickCheck must be false for
  /// a head whose first byte is not among them.
  virtual llvm::StringRef scanLeadBytes() const { return {}; }
  /// The region scan's way in for a kind without a signature it could believe anywhere, whose
  /// content it believes where that content is valid to its end (JSON text: an object or array
  /// that closes): the bytes such content starts with. The default: none (no part taken).
  virtual llvm::StringRef closedLeadBytes() const { return {}; }
  /// Where memory[at] is one of closedLeadBytes(): the length of content of this kind that starts
  /// there as content of its own (the bytes before `at` may show it nested in other content) and
  /// is valid to its end, when the scan may believe it; nullopt otherwise. Bounded work, no
  /// allocation. The content's details come from sniffing it later.
  virtual std::optional<uint64_t> closedLength(llvm::ArrayRef<uint8_t> memory, size_t at) const {
    (void)memory, (void)at;
    return std::nullopt;
  }
  /// For framing whose frames have no lead of their own but carry content that has one (an AMQP
  /// body frame: a 7-byte header, the payload, an end byte): where the region scan found content
  /// at memory[at], the bytes of the frame of this kind that would carry it, when the bytes
  /// around it have that frame's shape. The scan sniffs them and believes the frame when they are
  /// of this kind. The default: none. Cheap, no allocation.
  virtual std::optional<ByteSpan> frameAround(llvm::ArrayRef<uint8_t> memory, size_t at) const {
    (void)memory, (void)at;
    return std::nullopt;
  }
  /// The payloads that content of this kind carries, decoded (aws-chunked: the upload's data;
  /// amqp: each message's body), for content that starts at data[0] as validate saw it. Zero-copy:
  /// views into `data`. Kinds that carry no payload return none (the default).
  virtual std::vector<Payload> decodePayloads(llvm::ArrayRef<uint8_t> data) const {
    (void)data;
    return {};
  }

  static constexpr size_t kHeadBytes = 16;
  static constexpr size_t kNoCandidate = SIZE_MAX;
  /// sniff() looks for embedded content starting within this many bytes of the buffer start.
  static constexpr size_t kEmbeddedWindow = 4096;
};

/// Every signature sniffer, in priority order (kinds.def).
const std::vector<std::unique_ptr<Sniffer>> &sniffers();

/// The sniffer of `kind`, or nullptr for a statistical kind (text, utf16, zero, random, unknown).
const Sniffer *snifferFor(ContentKind kind);

/// What `buffer` holds: a signature kind at offset 0, else one within the first 4 KiB (with its
/// offset), else a statistical kind (zero, text, utf16, random), else unknown. Never fails.
SniffResult sniff(llvm::ArrayRef<uint8_t> buffer);

} // namespace dumpsift
