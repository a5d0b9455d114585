// Findings: unit tests over hand-built analyses (buffers planted in a synthetic address space),
// then the waste fixture end to end: a live process dumped with gcore, analyzed, and every finding
// checked against the addresses and sizes the process printed.
#include "analysis/waste_manifest.h"
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/analysis/findings.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "support/dumps.h"
#include "support/finding_numbers.h"
#include "support/synthetic_heaps.h"
#include "support/test_support.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Deterministic pseudo-random bytes (xorshift64), different for each seed.
std::vector<uint8_t> randomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    out[i] = static_cast<uint8_t>(s >> 24);
  }
  return out;
}

/// How to plant one buffer.
struct Plant {
  std::optional<ContentKind> kind; // default: what sniff() says
  AllocState state = AllocState::Used;
  bool mmapped = false;
  uint64_t captured = UINT64_MAX; // bytes the dump holds (default: all)
  std::optional<uint64_t> hash;   // forced hash (default: payloadFingerprint of the captured bytes)
  uint16_t source = 0;            // index into the analysis's heaps (0: glibc, 1: coreclr)
  std::optional<ManagedArray> managed;
};

/// A synthetic process: buffers planted at increasing addresses, each in its own memory range,
/// and an Analysis over them as analyze() would leave it (sniffed, hashed, grouped).
class Planted {
public:
  /// An empty process with a glibc and a coreclr heap; min_size as given.
  explicit Planted(uint64_t min_size = 256) {
    analysis_.options.min_size = min_size;
    HeapWalkResult glibc, coreclr;
    glibc.walker = "glibc";
    coreclr.walker = "coreclr";
    analysis_.heaps = {glibc, coreclr};
  }

  /// Plants `bytes` as one buffer; returns its address.
  uint64_t add(std::vector<uint8_t> bytes, const Plant &how = {}) {
    uint64_t address = next_;
    next_ += (bytes.size() + 2 * 4096) & ~uint64_t(4095);
    const std::vector<uint8_t> &stored = storage_.emplace_back(std::move(bytes));
    uint64_t captured = std::min<uint64_t>(how.captured, stored.size());
    Region r;
    r.start = address;
    r.size = stored.size();
    r.captured = captured;
    r.cls = RegionClass::Heap;
    snapshot_.regions.push_back(r);
    if (captured)
      snapshot_.memory.push_back({address, llvm::ArrayRef<uint8_t>(stored.data(), captured)});
    Buffer b;
    b.allocation.address = address;
    b.allocation.size = stored.size();
    b.allocation.chunk_address = address - 16;
    b.allocation.chunk_size = how.mmapped ? stored.size() + 16 : stored.size() + 8;
    b.allocation.state = how.state;
    b.allocation.mmapped = how.mmapped;
    b.allocation.managed = how.managed;
    b.source = how.source;
    llvm::ArrayRef<uint8_t> view(stored.data(), captured);
    b.captured = captured;
    b.hash = how.hash ? *how.hash : payloadFingerprint(view, /*full=*/false, b.hash_sampled);
    b.content = sniff(view);
    if (how.kind)
      b.content.kind = *how.kind;
    analysis_.buffers.push_back(std::move(b));
    return address;
  }

  /// Says that `holder` holds the buffer planted at `address` (as the holders pass would: the
  /// analysis then has a holders result for every buffer).
  void hold(uint64_t address, const Holder &holder) {
    analysis_.holders.buffers.resize(analysis_.buffers.size());
    for (size_t i = 0; i < analysis_.buffers.size(); ++i)
      if (analysis_.buffers[i].allocation.address == address)
        analysis_.holders.buffers[i].holders.push_back(holder);
  }

  /// The findings over everything planted so far.
  std::vector<Finding> findings() {
    if (!analysis_.holders.buffers.empty())
      analysis_.holders.buffers.resize(analysis_.buffers.size());
    analysis_.groups = groupBuffers(analysis_);
    AddressSpace memory(snapshot_);
    return computeFindings(memory, analysis_);
  }

private:
  std::deque<std::vector<uint8_t>> storage_;
  Snapshot snapshot_;
  Analysis analysis_;
  uint64_t next_ = 0x10000000;
};

/// The findings of one type.
std::vector<Finding> ofType(const std::vector<Finding> &all, const std::string &type) {
  std::vector<Finding> out;
  for (const Finding &f : all)
    if (f.type == type)
      out.push_back(f);
  return out;
}

/// True when the findings are in the documented order: bytes desc, type, first address.
bool sortedAsDocumented(const std::vector<Finding> &all) {
  return std::is_sorted(all.begin(), all.end(), [](const Finding &a, const Finding &b) {
    if (a.bytes != b.bytes)
      return a.bytes > b.bytes;
    if (a.type != b.type)
      return a.type < b.type;
    return a.addresses.front() < b.addresses.front();
  });
}

/// The first `n` bytes of `stream` in an array of `capacity` bytes, the rest filled as glibc
/// leaves it: `slack` bytes of stale garbage (heap chunk) or zeros (fresh mmapped pages).
std::vector<uint8_t> arrayOf(const std::vector<uint8_t> &stream, size_t n, size_t capacity,
                             bool garbage_slack) {
  std::vector<uint8_t> out(capacity, 0);
  std::copy_n(stream.begin(), n, out.begin());
  if (garbage_slack)
    for (size_t i = n; i < capacity; ++i)
      out[i] = static_cast<uint8_t>(0xa5 ^ i);
  return out;
}

/// glibc's usable size for malloc(n) with the default 128 KiB mmap threshold.
uint64_t glibcUsable(uint64_t n) {
  uint64_t nb = std::max<uint64_t>(32, (n + 8 + 15) & ~uint64_t(15));
  if (n < 128 * 1024)
    return nb - 8;
  return ((nb + 8 + 4095) & ~uint64_t(4095)) - 16;
}

/// Plants the trail of a doubling buffer that received `stream`: arrays of 256 * 2^k bytes up to
/// `largest`, each holding the stream up to its capacity (slack as glibc leaves it); only arrays
/// of at least `min_size` are planted. Returns the planted addresses, smallest array first.
std::vector<uint64_t> plantChain(Planted &p, const std::vector<uint8_t> &stream, uint64_t largest,
                                 uint64_t min_size = 0, double factor = 2.0, uint64_t first = 256) {
  std::vector<uint64_t> addresses;
  for (double c = static_cast<double>(first); c <= static_cast<double>(largest); c *= factor) {
    auto capacity = static_cast<uint64_t>(c);
    uint64_t usable = glibcUsable(capacity);
    if (usable < min_size)
      continue;
    bool mmapped = capacity >= 128 * 1024;
    Plant how;
    how.mmapped = mmapped;
    addresses.push_back(p.add(arrayOf(stream, capacity, usable, !mmapped), how));
  }
  return addresses;
}

} // namespace

TEST_CASE("findings: the type names match the report schema") {
  std::ifstream in(sourceDir() + "/docs/report.schema.json");
  REQUIRE(in.good());
  nlohmann::json schema = nlohmann::json::parse(in);
  auto names = schema["properties"]["findings"]["items"]["properties"]["type"]["enum"];
  std::vector<std::string> documented = names.get<std::vector<std::string>>();
  std::vector<std::string> ours(kFindingTypes.begin(), kFindingTypes.end());
  std::sort(documented.begin(), documented.end());
  std::sort(ours.begin(), ours.end());
  CHECK(documented == ours);

  std::ifstream doc_in(sourceDir() + "/docs/findings.md");
  REQUIRE(doc_in.good());
  std::string doc((std::istreambuf_iterator<char>(doc_in)), {});
  for (std::string_view type : kFindingTypes)
    CHECK(doc.find("`" + std::string(type) + "`") != std::string::npos);
}

TEST_CASE("duplicates: identical copies, not buffers that merely share a size") {
  Planted p;
  std::vector<uint8_t> image = randomBytes(100000, 1);
  std::vector<uint64_t> copies;
  for (int i = 0; i < 3; ++i) {
    copies.push_back(p.add(image));
    p.add(randomBytes(100000, 10 + i)); // same size, other bytes
  }
  std::vector<uint64_t> zeros{p.add(std::vector<uint8_t>(100000, 0)),
                              p.add(std::vector<uint8_t>(100000, 0))};
  std::vector<Finding> all = p.findings();
  CHECK(sortedAsDocumented(all));

  auto dups = ofType(all, "duplicates");
  REQUIRE(dups.size() == 1);
  CHECK(dups[0].addresses == copies);
  CHECK(findingNumber(dups[0], "count") == 3);
  CHECK(findingNumber(dups[0], "size") == 100000);
  CHECK(findingNumber(dups[0], "total_bytes") == 300000);
  CHECK(dups[0].bytes == 200000);
  CHECK(dups[0].explanation ==
        "3 buffers of 100,000 bytes hold the same random-looking data: 2 redundant copies waste "
        "195.3 KiB");

  // All-zero buffers are zero-filled, never duplicates.
  auto zero = ofType(all, "zero-filled");
  REQUIRE(zero.size() == 1);
  CHECK(zero[0].addresses == zeros);
  CHECK(findingNumber(zero[0], "count") == 2);
  CHECK(zero[0].bytes == 200000);
}

TEST_CASE("duplicates: a hash collision is not a copy, and neither is a free or partial one") {
  Planted p;
  Plant collide;
  collide.hash = 42;
  p.add(randomBytes(100000, 1), collide);
  p.add(randomBytes(100000, 2), collide);

  Plant free_chunk;
  free_chunk.state = AllocState::Free;
  std::vector<uint8_t> image = randomBytes(200000, 3);
  p.add(image, free_chunk);
  p.add(image, free_chunk);

  Plant partial;
  partial.captured = 4096;
  std::vector<uint8_t> other = randomBytes(300000, 4);
  p.add(other, partial);
  p.add(other, partial);

  CHECK(ofType(p.findings(), "duplicates").empty());
}

TEST_CASE("payloadFingerprint: every byte up to 72 KiB, sampled windows above") {
  const std::vector<uint8_t> small = randomBytes(kFingerprintWindow * kFingerprintWindows, 6);
  bool sampled = true;
  CHECK(payloadFingerprint(small, /*full=*/false, sampled) == llvm::xxHash64(small));
  CHECK_FALSE(sampled);

  std::vector<uint8_t> large = randomBytes(1 << 20, 7);
  const uint64_t fingerprint = payloadFingerprint(large, /*full=*/false, sampled);
  CHECK(sampled);
  CHECK(fingerprint != llvm::xxHash64(large));
  CHECK(payloadFingerprint(large, /*full=*/true, sampled) == llvm::xxHash64(large));
  CHECK_FALSE(sampled);

  // A byte in the first, a middle or the last window changes it; one between windows does not.
  const uint64_t stride = (large.size() - kFingerprintWindow) / (kFingerprintWindows - 1);
  for (uint64_t at : {uint64_t(0), 5 * stride + 17, uint64_t(large.size() - 1)}) {
    std::vector<uint8_t> changed = large;
    changed[at] ^= 1;
    CHECK(payloadFingerprint(changed, false, sampled) != fingerprint);
  }
  std::vector<uint8_t> between = large;
  between[kFingerprintWindow + 100] ^= 1;
  CHECK(payloadFingerprint(between, false, sampled) == fingerprint);
  // The size is part of it: a zero-extended copy differs.
  std::vector<uint8_t> longer = large;
  longer.resize(large.size() + 4096);
  CHECK(payloadFingerprint(longer, false, sampled) != fingerprint);
}

TEST_CASE("duplicates: buffers whose sampled windows match are copies only when every byte does") {
  const std::vector<uint8_t> image = randomBytes(1 << 20, 8);
  std::vector<uint8_t> near_copy = image;
  near_copy[kFingerprintWindow + 100] ^= 1; // between the sampled windows
  Planted p;
  const uint64_t first = p.add(image);
  p.add(near_copy);
  const uint64_t copy = p.add(image);
  auto dups = ofType(p.findings(), "duplicates");
  REQUIRE(dups.size() == 1);
  CHECK(dups[0].addresses == std::vector<uint64_t>{first, copy});
  CHECK(findingNumber(dups[0], "count") == 2);
}

TEST_CASE("growth-chain: the trail of a doubling buffer, with glibc's slack") {
  std::vector<uint8_t> stream = randomBytes(400000, 5);
  Planted p;
  std::vector<uint64_t> chain = plantChain(p, stream, 256 * 1024);
  REQUIRE(chain.size() == 11);
  // The whole stream, copied out at its exact size: a prefix holder, but not a doubling step.
  uint64_t copy = p.add(arrayOf(stream, stream.size(), glibcUsable(stream.size()), false));
  // Another stream with the same first 256 bytes (a common header), between the chain's sizes.
  std::vector<uint8_t> other = randomBytes(70000, 6);
  std::copy_n(stream.begin(), 256, other.begin());
  for (uint64_t c : {3000, 20000})
    p.add(arrayOf(other, c, glibcUsable(c), true));

  std::vector<Finding> all = p.findings();
  auto chains = ofType(all, "growth-chain");
  REQUIRE(chains.size() == 1);
  const Finding &f = chains[0];
  CHECK(f.addresses == chain);
  CHECK(std::find(f.addresses.begin(), f.addresses.end(), copy) == f.addresses.end());
  uint64_t total = 0;
  for (uint64_t c = 256; c <= 256 * 1024; c *= 2)
    total += glibcUsable(c);
  CHECK(findingNumber(f, "count") == 11);
  CHECK(findingNumber(f, "first_size") == 264);
  CHECK(findingNumber(f, "final_size") == 266224);
  CHECK(findingNumber(f, "total_bytes") == total);
  CHECK(findingNumber(f, "growth_percent") == 200);
  CHECK(f.bytes == total - 266224);
  CHECK(f.explanation == "a buffer grew x2 at a time from 264 to 266,224 bytes and left 10 "
                         "outgrown arrays behind, each holding the start of the same "
                         "random-looking stream: " +
                             humanBytes(total - 266224) + " wasted (" + humanBytes(total) +
                             " in all)");
}

TEST_CASE("growth-chain: only the arrays above --min-size, and a x1.5 chain") {
  std::vector<uint8_t> stream = randomBytes(400000, 7);
  Planted p(65536);
  std::vector<uint64_t> chain = plantChain(p, stream, 256 * 1024, 65536);
  REQUIRE(chain.size() == 3);
  std::vector<uint8_t> other = randomBytes(400000, 8);
  std::vector<uint64_t> slow = plantChain(p, other, 350000, 0, 1.5, 40000);
  REQUIRE(slow.size() == 6);
  std::vector<Finding> all = p.findings();
  auto chains = ofType(all, "growth-chain");
  REQUIRE(chains.size() == 2);
  auto doubling = std::find_if(chains.begin(), chains.end(),
                               [&](const Finding &f) { return f.addresses == chain; });
  REQUIRE(doubling != chains.end());
  CHECK(findingNumber(*doubling, "count") == 3);
  CHECK(doubling->explanation.find("; smaller arrays, if any, are under --min-size 65,536") !=
        std::string::npos);
  auto x15 = std::find_if(chains.begin(), chains.end(),
                          [&](const Finding &f) { return f.addresses == slow; });
  REQUIRE(x15 != chains.end());
  CHECK(findingNumber(*x15, "growth_percent") == 150);
  CHECK(x15->explanation.rfind("a buffer grew x1.5 at a time from 40,008 to ", 0) == 0);
}

TEST_CASE("growth-chain: shared headers, half-empty arrays and odd steps are not chains") {
  Planted p;
  // Same first 4 KiB, then different: every array's start matches, but none is a prefix.
  std::vector<uint8_t> header = randomBytes(4096, 9);
  for (uint64_t c = 16384; c <= 262144; c *= 2) {
    std::vector<uint8_t> bytes = randomBytes(glibcUsable(c), c);
    std::copy(header.begin(), header.end(), bytes.begin());
    p.add(std::move(bytes));
  }
  // A short message in ever larger zeroed buffers: prefixes, but not full arrays.
  std::vector<uint8_t> message = randomBytes(300, 10);
  for (uint64_t c = 65536; c <= 1048576; c *= 2)
    p.add(arrayOf(message, 300, c, false));
  // Prefixes of one stream at sizes that do not grow by a steady factor.
  std::vector<uint8_t> stream = randomBytes(600000, 11);
  for (uint64_t c : {70000, 90000, 300000, 330000})
    p.add(arrayOf(stream, c, c + 8, true));
  CHECK(ofType(p.findings(), "growth-chain").empty());
}

TEST_CASE("growth-chain: thousands of buffers with one header stay cheap") {
  // 4,000 buffers share their first 4 KiB and most pairs are a growth step apart: tried pairwise,
  // that is millions of 4 KiB comparisons; bounded, at most 8 per buffer.
  Planted p;
  std::vector<uint8_t> header = randomBytes(4096, 14);
  for (uint64_t i = 0; i < 4000; ++i) {
    std::vector<uint8_t> bytes = randomBytes(4352 + 2 * i, 1000 + i);
    std::copy(header.begin(), header.end(), bytes.begin());
    p.add(std::move(bytes));
  }
  CHECK(ofType(p.findings(), "growth-chain").empty());
}

TEST_CASE("zero-tail: capacity far beyond the content") {
  Planted p;
  std::vector<uint8_t> body(1052656, 0);
  std::vector<uint8_t> text = randomBytes(102400, 12);
  std::copy(text.begin(), text.end(), body.begin());
  body[102399] = 0x7d;
  Plant how;
  how.mmapped = true;
  how.kind = ContentKind::Random;
  uint64_t tail = p.add(body, how);
  // Content past the middle is not a long tail.
  std::vector<uint8_t> mostly(300000, 0);
  std::vector<uint8_t> data = randomBytes(200000, 13);
  std::copy(data.begin(), data.end(), mostly.begin());
  p.add(mostly);
  auto tails = ofType(p.findings(), "zero-tail");
  REQUIRE(tails.size() == 1);
  CHECK(tails[0].addresses == std::vector<uint64_t>{tail});
  CHECK(tails[0].bytes == 1052656 - 102400);
  CHECK(findingNumber(tails[0], "count") == 1);
  CHECK(findingNumber(tails[0], "size") == 1052656);
  CHECK(findingNumber(tails[0], "content_bytes") == 102400);
  CHECK(tails[0].explanation ==
        "a buffer of 1,052,656 bytes holds 102,400 bytes of random-looking data and then 950,256 "
        "zero bytes: its capacity is far beyond its content (90% unused)");
}

TEST_CASE("size-class: mmap threshold, S3 chunk frames, the LOH and pool buckets") {
  Planted p;
  Plant mmapped;
  mmapped.mmapped = true;
  Plant aws = mmapped;
  aws.kind = ContentKind::AwsChunked;
  std::vector<uint64_t> frames;
  for (int i = 0; i < 3; ++i)
    frames.push_back(p.add(randomBytes(135152, 20 + i), i ? mmapped : aws));
  std::vector<uint64_t> megs;
  for (int i = 0; i < 2; ++i)
    megs.push_back(p.add(randomBytes(1052656, 30 + i), mmapped));
  Plant loh;
  loh.source = 1;
  loh.managed = ManagedArray{0x7f0000001000, 85000, 1, true, "System.Byte[]", "loh"};
  std::vector<uint64_t> arrays;
  for (int i = 0; i < 2; ++i)
    arrays.push_back(p.add(randomBytes(85024, 40 + i), loh));
  for (int i = 0; i < 4; ++i) // nothing special about 200,688 bytes
    p.add(randomBytes(200688, 50 + i), mmapped);
  p.add(randomBytes(135152, 60)); // a heap chunk of that size: a group of one, not a class

  auto classes = ofType(p.findings(), "size-class");
  REQUIRE(classes.size() == 3);
  auto with = [&](const std::vector<uint64_t> &addresses) {
    auto it = std::find_if(classes.begin(), classes.end(),
                           [&](const Finding &f) { return f.addresses == addresses; });
    REQUIRE(it != classes.end());
    return *it;
  };
  Finding s3 = with(frames);
  CHECK(findingNumber(s3, "threshold") == 131072);
  CHECK(s3.bytes == 3 * 135152);
  CHECK(s3.explanation ==
        "3 buffers of 135,152 bytes are 131,162-byte S3 signed chunk frames (128 KiB of data plus "
        "90 bytes of framing) and 128 KiB (131,072-byte) requests: just over glibc's 128 KiB mmap "
        "threshold, so each is its own mmap of 135,168 bytes, unmapped again on free; 131,072 "
        "bytes is a power-of-two pool bucket (ArrayPool-style pools round requests up to a power "
        "of two)");
  Finding pool = with(megs);
  CHECK(findingNumber(pool, "threshold") == 1048576);
  CHECK(pool.explanation.rfind("2 buffers of 1,052,656 bytes are 1 MiB (1,048,576-byte) "
                               "requests: 1,048,576 bytes is a power-of-two pool bucket",
                               0) == 0);
  Finding lohs = with(arrays);
  CHECK(findingNumber(lohs, "threshold") == 85000);
  CHECK(lohs.explanation == "2 buffers of 85,024 bytes: just over .NET's 85,000-byte "
                            "large-object threshold, so each lives on the large object heap, "
                            "which is collected only with gen 2 and not compacted");
}

TEST_CASE("size-class: the LOH threshold holds for both .NET walkers (coreclr and netfx)") {
  // A 64-bit Windows process of each runtime (CoreCLR; the .NET Framework's clr.dll, which the
  // netfx walker reads) whose large object heap holds two byte[90001] arrays, laid out as the
  // runtime does (tests/support/synthetic_heaps.h, from docs/heap-managed.md), run through the
  // whole analysis: 90,025-byte objects, just over .NET's 85,000-byte threshold.
  const std::pair<const char *, const char *> runtimes[] = {
      {"coreclr", "C:\\Program Files\\dotnet\\shared\\Microsoft.NETCore.App\\8.0.0\\coreclr.dll"},
      {"netfx", "C:\\Windows\\Microsoft.NET\\Framework64\\v4.0.30319\\clr.dll"}};
  for (const auto &[walker, runtime] : runtimes) {
    INFO("walker " << walker);
    test::FakeProcess process;
    process.system.os = Os::Windows;
    process.system.arch = "x86_64";
    process.system.pointer_size = 8;
    const test::ClrTypes types = test::putClrTypes(process, 0x10000, 4, 8);
    process.addRegion(0x70000000, 0x10000, runtime); // the runtime's image
    constexpr uint64_t kLoh = 0x02000000;
    process.addRegion(kLoh, 0x80000);
    std::vector<uint64_t> arrays;
    uint64_t at = kLoh + 0x1000;
    for (int i = 0; i < 2; ++i) {
      arrays.push_back(at);
      at = test::putClrArray(process, types, at, types.byte_array, 90001, 1, 8);
      process.putBytes(arrays.back() + 16, llvm::StringRef("not zeros"));
    }
    test::putClrSegment(process, kLoh, 8, kLoh + 0x1000, at, kLoh + 0x80000, 8);
    const Snapshot &snap = process.snapshot();
    AddressSpace memory(snap);
    AnalyzeOptions options;
    options.region_scan = false;
    options.threads = 1;
    const Analysis analysis = analyze(memory, options);
    REQUIRE(analysis.heaps.size() == 1);
    CHECK(analysis.heaps[0].walker == walker);
    REQUIRE(analysis.buffers.size() == 2);
    auto classes = ofType(analysis.findings, "size-class");
    REQUIRE(classes.size() == 1);
    CHECK(classes[0].addresses == arrays);
    CHECK(findingNumber(classes[0], "threshold") == 85000);
    CHECK(classes[0].explanation == "2 buffers of 90,025 bytes: just over .NET's 85,000-byte "
                                    "large-object threshold, so each lives on the large object "
                                    "heap, which is collected only with gen 2 and not compacted");
  }
}

TEST_CASE("many-same-size: 100 or more buffers of one size and kind") {
  Planted p;
  Plant json;
  json.kind = ContentKind::Json;
  std::vector<uint64_t> bodies;
  for (int i = 0; i < 120; ++i)
    bodies.push_back(p.add(randomBytes(8200, 100 + i), json));
  for (int i = 0; i < 99; ++i)
    p.add(randomBytes(9000, 300 + i), json);
  auto many = ofType(p.findings(), "many-same-size");
  REQUIRE(many.size() == 1);
  CHECK(many[0].addresses == bodies);
  CHECK(findingNumber(many[0], "count") == 120);
  CHECK(findingNumber(many[0], "size") == 8200);
  CHECK(many[0].bytes == 120 * 8200);
  CHECK(many[0].explanation == "120 buffers of 8,200 bytes all hold json (960.9 KiB): likely one "
                               "code path allocating a buffer per request, or a pool holding them");
}

TEST_CASE("held-by-type: objects of one type holding buffers in several fields") {
  Planted p;
  // Three upload streams, each holding an input and an output buffer; one also in a third field.
  auto field = [](uint64_t object, const char *type, const char *name, uint64_t offset) {
    Holder h;
    h.kind = HolderKind::Heap;
    h.block = object;
    h.block_size = 64;
    h.slot = object + offset;
    h.class_name = type;
    h.field = name;
    return h;
  };
  const char *stream = "Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream";
  std::vector<uint64_t> held;
  for (uint64_t k = 0; k < 3; ++k) {
    const uint64_t object = 0x7000000 + 64 * k;
    held.push_back(p.add(randomBytes(131096, 10 + k)));
    p.hold(held.back(), field(object, stream, "_inputBuffer", 16));
    held.push_back(p.add(randomBytes(131186, 20 + k)));
    p.hold(held.back(), field(object, stream, "_outputBuffer", 24));
  }
  held.push_back(p.add(randomBytes(70000, 30)));
  p.hold(held.back(), field(0x7000000, stream, "_extra", 32));
  // Not counted: a type whose objects hold one field each, an array's elements, a static, a
  // stack, a free buffer.
  const uint64_t alone = p.add(randomBytes(200000, 40));
  p.hold(alone, field(0x7100000, "System.IO.MemoryStream", "_buffer", 16));
  const uint64_t element = p.add(randomBytes(200000, 41));
  p.hold(element, field(0x7200000, stream, "[0]", 16));
  Holder as_static = field(0x7300000, stream, "_inputBuffer", 16);
  as_static.is_static = true;
  p.hold(p.add(randomBytes(200000, 42)), as_static);
  Holder stack;
  stack.kind = HolderKind::Stack;
  p.hold(p.add(randomBytes(200000, 43)), stack);
  Plant free;
  free.state = AllocState::Free;
  p.hold(p.add(randomBytes(200000, 44), free), field(0x7000040, stream, "_inputBuffer", 16));

  std::vector<Finding> all = p.findings();
  auto by_type = ofType(all, "held-by-type");
  REQUIRE(by_type.size() == 1);
  const Finding &f = by_type[0];
  CHECK(f.addresses == held);
  const uint64_t bytes = 3 * (131096 + 131186) + 70000;
  CHECK(f.bytes == bytes);
  CHECK(findingNumber(f, "objects") == 3);
  CHECK(findingNumber(f, "buffers") == 7);
  CHECK(findingNumber(f, "fields") == 3);
  CHECK(findingNumber(f, "bytes_per_object") == bytes / 3);
  CHECK(f.explanation == "3 `Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream` objects hold "
                         "7 buffers (" +
                             humanBytes(bytes) + ", " + humanBytes(bytes / 3) +
                             " per object): `_extra` 1 x 70,000 bytes, `_inputBuffer` 3 x 131,096 "
                             "bytes, `_outputBuffer` 3 x 131,186 bytes");

  // Without the holders pass there is none.
  Planted none;
  none.add(randomBytes(131096, 1));
  CHECK(ofType(none.findings(), "held-by-type").empty());
}

TEST_CASE("findings: small waste is dropped, order is by bytes then type then address") {
  Planted p;
  std::vector<uint8_t> small = randomBytes(30000, 70);
  p.add(small);
  p.add(small); // 30,000 bytes wasted: under the 64 KiB floor
  std::vector<uint8_t> big = randomBytes(70000, 71);
  uint64_t b1 = p.add(big);
  p.add(big);
  uint64_t z1 = p.add(std::vector<uint8_t>(70000, 0));
  std::vector<Finding> all = p.findings();
  REQUIRE(all.size() == 2);
  // Equal bytes: "duplicates" sorts before "zero-filled".
  CHECK(all[0].type == "duplicates");
  CHECK(all[0].addresses.front() == b1);
  CHECK(all[1].type == "zero-filled");
  CHECK(all[1].addresses.front() == z1);
}

// ---------------------------------------------------------------------------------------------
// The waste fixture, live.
// ---------------------------------------------------------------------------------------------

namespace {

/// The single finding of `type` whose addresses include `address` (REQUIREs exactly one).
Finding findingWith(const std::vector<Finding> &all, const std::string &type, uint64_t address) {
  std::vector<Finding> hits;
  for (const Finding &f : all)
    if (f.type == type &&
        std::find(f.addresses.begin(), f.addresses.end(), address) != f.addresses.end())
      hits.push_back(f);
  INFO("findings of type " << type << " holding " << hexAddress(address));
  REQUIRE(hits.size() == 1);
  return hits.front();
}

} // namespace

TEST_CASE("findings name the waste in a live process (waste fixture)", "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("waste"));
  std::unique_ptr<Snapshot> snap = dumpLive(proc, "findings_waste");
  AddressSpace memory(*snap);
  auto planted = byName(proc.manifest());
  REQUIRE(planted["chain"].size() == 11);
  REQUIRE(planted["copy"].size() == 3);
  REQUIRE(planted["zeros"].size() == 12);
  REQUIRE(planted["zero-tail"].size() == 1);
  REQUIRE(planted["random"].size() == 4);
  REQUIRE(planted["request"].size() == 128);

  AnalyzeOptions options;
  options.min_size = 256; // the whole growth trail, from its 256-byte array
  options.threads = 2;
  Analysis analysis = analyze(memory, options);
  const std::vector<Finding> &all = analysis.findings;
  CHECK(sortedAsDocumented(all));

  SECTION("the image held three times") {
    uint64_t size = planted["copy"][0].usable;
    Finding f = findingWith(all, "duplicates", planted["copy"][0].address);
    CHECK(f.addresses == addressesOf(planted["copy"], true));
    CHECK(findingNumber(f, "count") == 3);
    CHECK(findingNumber(f, "size") == size);
    CHECK(f.bytes == 2 * size);
    for (const Planted3 &r : planted["random"])
      for (const Finding &d : ofType(all, "duplicates"))
        CHECK(std::find(d.addresses.begin(), d.addresses.end(), r.address) == d.addresses.end());
  }
  SECTION("copies are compared while they are sniffed, and distinct buffers are not copies") {
    AnalyzeOptions one_thread = options;
    one_thread.threads = 1; // in address order: each copy after the first meets the first
    Analysis serial = analyze(memory, one_thread);
    auto bufferAt = [&](uint64_t address) -> const Buffer & {
      auto it = std::find_if(serial.buffers.begin(), serial.buffers.end(),
                             [&](const Buffer &b) { return b.allocation.address == address; });
      REQUIRE(it != serial.buffers.end());
      return *it;
    };
    std::vector<Planted3> copies = planted["copy"];
    std::sort(copies.begin(), copies.end(),
              [](const Planted3 &a, const Planted3 &b) { return a.address < b.address; });
    CHECK_FALSE(bufferAt(copies[0].address).identical_to);
    for (size_t i = 1; i < copies.size(); ++i) {
      INFO("copy " << hexAddress(copies[i].address));
      CHECK(bufferAt(copies[i].address).identical_to == copies[0].address);
      CHECK(bufferAt(copies[i].address).content.kind == bufferAt(copies[0].address).content.kind);
    }
    for (const Planted3 &r : planted["random"])
      CHECK_FALSE(bufferAt(r.address).identical_to);
    // The same findings whichever thread met which copy first.
    REQUIRE(serial.findings.size() == all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      CHECK(serial.findings[i].type == all[i].type);
      CHECK(serial.findings[i].addresses == all[i].addresses);
      CHECK(serial.findings[i].bytes == all[i].bytes);
    }
  }
  SECTION("the trail of the doubling buffer") {
    Finding f = findingWith(all, "growth-chain", planted["chain"][0].address);
    CHECK(f.addresses == addressesOf(planted["chain"], false));
    uint64_t total = 0;
    for (const Planted3 &c : planted["chain"])
      total += c.usable;
    CHECK(findingNumber(f, "count") == 11);
    CHECK(findingNumber(f, "first_size") == 264);
    CHECK(findingNumber(f, "final_size") == planted["chain"].back().usable);
    CHECK(findingNumber(f, "total_bytes") == total);
    CHECK(findingNumber(f, "growth_percent") == 200);
    CHECK(f.bytes == total - planted["chain"].back().usable);
  }
  SECTION("twelve zeroed 1 MiB buffers, and one with a long zero tail") {
    uint64_t size = planted["zeros"][0].usable;
    Finding z = findingWith(all, "zero-filled", planted["zeros"][0].address);
    CHECK(z.addresses == addressesOf(planted["zeros"], true));
    CHECK(findingNumber(z, "count") == 12);
    CHECK(findingNumber(z, "size") == size);
    CHECK(z.bytes == 12 * size);

    const Planted3 &t = planted["zero-tail"][0];
    Finding tail = findingWith(all, "zero-tail", t.address);
    CHECK(tail.addresses == std::vector<uint64_t>{t.address});
    CHECK(findingNumber(tail, "content_bytes") == t.content);
    CHECK(tail.bytes == t.usable - t.content);

    // The 1 MiB requests sit on a power-of-two pool bucket: the twelve plus the tail buffer.
    Finding pool = findingWith(all, "size-class", t.address);
    CHECK(findingNumber(pool, "count") == 13);
    CHECK(findingNumber(pool, "threshold") == 1048576);
  }
  SECTION("128 request bodies of one size") {
    Finding f = findingWith(all, "many-same-size", planted["request"][0].address);
    CHECK(f.addresses == addressesOf(planted["request"], true));
    CHECK(findingNumber(f, "count") == 128);
    CHECK(f.bytes == 128 * planted["request"][0].usable);
  }
  // With the default --min-size, the same chain is seen from 64 KiB up.
  AnalyzeOptions defaults;
  defaults.threads = 2;
  Analysis coarse = analyze(memory, defaults);
  Finding f = findingWith(coarse.findings, "growth-chain", planted["chain"].back().address);
  std::vector<uint64_t> top3 = addressesOf(planted["chain"], false);
  top3.erase(top3.begin(), top3.end() - 3);
  CHECK(f.addresses == top3);
  CHECK(f.explanation.find("smaller arrays, if any, are under --min-size 65,536") !=
        std::string::npos);
}
