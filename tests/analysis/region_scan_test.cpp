// The region scan (src/analysis/region_scan.cpp): content found by its signature in memory no heap
// walker claims. A live process keeps whole files in its own mmap'd pool
// (fixtures/programs/unclaimed_pool.c, dumped with gcore): each must be found at its address with
// its length, and nothing else; then hand-laid memory for what a live process does not show
// (claimed areas, the size threshold, an aws-chunked body).
#include "../../src/analysis/region_scan.h"
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/support/hex.h"
#include "extract/extract_fixtures.h"
#include "support/dumps.h"

#include <catch2/catch.hpp>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

// What the region scan finds in `ranges` with a 4 KiB threshold and the default inflate budget.
std::vector<Buffer> scanWithDefaults(const AddressSpace &memory,
                                     const std::vector<UnclaimedRange> &ranges) {
  AnalyzeOptions options;
  options.min_size = 4096;
  std::vector<Buffer> found;
  SniffBudget budget(options.inflate_budget);
  Diagnostics diags;
  scanUnclaimed(
      memory, ranges, options, false, budget, diags, [](llvm::StringRef, uint64_t, uint64_t) {},
      [&](Buffer b) { found.push_back(std::move(b)); });
  return found;
}

} // namespace

TEST_CASE("region scan: every file of a process's own pool, at its address, with its length",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("unclaimed_pool"), {sourceDir() + "/fixtures/content"});
  std::unique_ptr<Snapshot> snap = dumpLive(proc, "region_scan_pool");
  AddressSpace memory(*snap);
  AnalyzeOptions options;
  options.min_size = 1024; // the smallest file planted is 1,894 bytes
  Analysis analysis = analyze(memory, options);

  std::map<uint64_t, const Buffer *> scanned, walked;
  for (const Buffer &b : analysis.buffers)
    (b.source == kRegionScan ? scanned : walked)[b.allocation.address] = &b;
  size_t pooled = 0;
  for (const nlohmann::json &item : proc.manifest()) {
    const uint64_t address = *parseHexAddress(item["address"].get<std::string>());
    const uint64_t size = item["size"];
    INFO(item.dump());
    if (item["place"] == "malloc") {
      // glibc's walker reports it; the region scan does not see claimed memory.
      CHECK(scanned.count(address) == 0);
      REQUIRE(walked.count(address) == 1);
      CHECK(kindName(walked[address]->content.kind) == item["kind"].get<std::string>());
      continue;
    }
    ++pooled;
    REQUIRE(scanned.count(address) == 1);
    const Buffer &b = *scanned[address];
    CHECK(kindName(b.content.kind) == item["kind"].get<std::string>());
    // A whole file's extent comes from its format; a cut one's is the run of non-zero bytes.
    CHECK(b.allocation.size == size);
    CHECK(b.estimated == item["cut"].get<bool>());
    CHECK(b.captured == size);
  }
  CHECK(pooled == 9);
  // Nothing else in the pool looks like content. (Elsewhere in a live process, a stack or libc's
  // data can hold a few bytes that happen to pass a signature; that is not this test's question.)
  const Region *pool = memory.regionContaining(
      *parseHexAddress(proc.manifest().front()["address"].get<std::string>()));
  REQUIRE(pool != nullptr);
  size_t in_pool = 0;
  std::string found;
  for (const auto &[address, b] : scanned)
    if (address >= pool->start && address < pool->end()) {
      ++in_pool;
      found += " " + hexAddress(address) + ":" + std::string(kindName(b->content.kind));
    }
  INFO("region-scan buffers in the pool:" << found);
  CHECK(in_pool == pooled);
}

TEST_CASE("region scan: claimed memory and small content are left out") {
  const ByteVec png = contentFixture("image.png");
  const ByteVec gif = contentFixture("image.gif");
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  const ByteVec aws = awsChunked(
      {ByteVec(jpeg.begin(), jpeg.begin() + 5000), ByteVec(jpeg.begin() + 5000, jpeg.end())});
  const ByteVec small = contentFixture("image.webp"); // 1,894 bytes: under the threshold
  constexpr uint64_t kPool = 0x7f0000000000, kPng = kPool + 0x1010, kAws = kPool + 0x20008,
                     kGif = kPool + 0x30000, kSmall = kPool + 0x40000;
  FakeMemory fake;
  fake.addRegion(kPool, 0x50000);
  fake.putBytes(kPng, png);
  fake.putBytes(kAws, aws);
  fake.putBytes(kGif, gif);
  fake.putBytes(kSmall, small);
  fake.put8(kPool + 0x4ffff, 0); // captured to the end
  std::unique_ptr<Snapshot> snap = fake.snapshot();
  AddressSpace memory(*snap);

  // A walker claims the GIF's part of the pool.
  std::vector<HeapArea> claimed = {{"pool", kGif - 0x10, 0x8000, 0}};
  std::vector<UnclaimedRange> ranges = unclaimedRanges(*snap, claimed);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].start == kPool);
  CHECK(ranges[0].end() == kGif - 0x10);
  CHECK(ranges[1].start == kGif - 0x10 + 0x8000);
  CHECK(ranges[1].end() == kPool + 0x50000);

  const std::vector<Buffer> found = scanWithDefaults(memory, ranges);
  REQUIRE(found.size() == 2);
  CHECK(found[0].allocation.address == kPng);
  CHECK(found[0].allocation.size == png.size());
  CHECK(found[0].content.kind == ContentKind::Png);
  CHECK_FALSE(found[0].estimated);
  CHECK(found[1].allocation.address == kAws);
  CHECK(found[1].allocation.size == aws.size());
  CHECK(found[1].content.kind == ContentKind::AwsChunked);
  CHECK_FALSE(found[1].estimated);
  for (const Buffer &b : found) {
    CHECK(b.source == kRegionScan);
    CHECK(b.allocation.state == AllocState::Unknown);
  }
}

TEST_CASE("region scan: a JPEG an AMQP body frame carries is reported as the frame") {
  // A stale copy of a client's body frame (header: type 3, channel 1, the JPEG's size; then the
  // JPEG and 0xCE) in memory no walker claims, after some text; and the same JPEG with a byte
  // before it that is not a frame's end (0xCD), which stays a JPEG.
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec frame = {3, 0, 1};
  for (int shift = 24; shift >= 0; shift -= 8)
    frame.push_back(static_cast<uint8_t>(jpeg.size() >> shift));
  frame.insert(frame.end(), jpeg.begin(), jpeg.end());
  frame.push_back(0xCE);
  ByteVec not_frame = frame;
  not_frame.back() = 0xCD;
  constexpr uint64_t kPool = 0x7f0000000000, kFrame = kPool + 0x1003, kNotFrame = kPool + 0x9001;
  FakeMemory fake;
  fake.addRegion(kPool, 0x10000);
  fake.putBytes(kPool + 0x1000, ByteVec{'a', 'b', 'c'}); // the frame follows text, not zeros
  fake.putBytes(kFrame, frame);
  fake.putBytes(kNotFrame, not_frame);
  fake.put8(kPool + 0xffff, 0);
  std::unique_ptr<Snapshot> snap = fake.snapshot();
  AddressSpace memory(*snap);
  const std::vector<Buffer> found = scanWithDefaults(memory, unclaimedRanges(*snap, {}));
  REQUIRE(found.size() == 2);
  CHECK(found[0].allocation.address == kFrame);
  CHECK(found[0].allocation.size == frame.size());
  CHECK(found[0].content.kind == ContentKind::Amqp);
  const DetailValue *payload = found[0].content.details.get("payload_kind");
  REQUIRE(payload != nullptr);
  CHECK(std::get<std::string>(*payload) == "jpeg");
  CHECK(found[1].allocation.address == kNotFrame + 7);
  CHECK(found[1].content.kind == ContentKind::Jpeg);
}
