// Sniffers: say what a buffer holds. Each has a cheap check on the first bytes and a full
// validation run only on a hit. All sniffers are listed in one registry (src/sniff/registry.cpp).
#pragma once

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

enum class ContentKind : uint8_t {
  Jpeg,
  Png,
  Gif,
  Webp,
  Bmp,
  Gzip,
  Zlib,
  Zstd,
  Zip,
  Pdf,
  AwsChunked,
  Amqp,
  Http,
  Json,
  Xml,
  Html,
  Text,
  Utf16,
  Zero,
  Random,
  Unknown
};
llvm::StringRef kindName(ContentKind kind);            // exactly the report names: "aws-chunked"
std::optional<ContentKind> parseKind(llvm::StringRef); // inverse of kindName
llvm::StringRef kindExtension(ContentKind kind);       // "jpg", "png", "gz", "json", "txt", "bin"
/// All kinds, in enum order.
const std::vector<ContentKind> &allKinds();

using DetailValue =
    std::variant<bool, int64_t, uint64_t, double, std::string, std::vector<uint64_t>>;

/// Ordered key/value facts about content ("width": 640). Keys are snake_case and documented in
/// docs/kinds.md.
struct Details {
  std::vector<std::pair<std::string, DetailValue>> entries;
  void set(std::string key, DetailValue value);
  const DetailValue *get(llvm::StringRef key) const;
};

struct SniffResult {
  ContentKind kind = ContentKind::Unknown;
  uint64_t offset = 0; // where the content starts inside the buffer
  uint64_t length = 0; // content length from `offset` (the format's own extent where known)
  bool length_estimated = false;
  Details details;
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

  static constexpr size_t kHeadBytes = 16;
  static constexpr size_t kNoCandidate = SIZE_MAX;
  /// sniff() looks for embedded content starting within this many bytes of the buffer start.
  static constexpr size_t kEmbeddedWindow = 4096;
};

/// Every signature sniffer, in priority order.
const std::vector<std::unique_ptr<Sniffer>> &sniffers();

/// What `buffer` holds: a signature kind at offset 0, else one within the first 4 KiB (with its
/// offset), else a statistical kind (zero, text, utf16, random), else unknown. Never fails.
SniffResult sniff(llvm::ArrayRef<uint8_t> buffer);

} // namespace dumpsift
