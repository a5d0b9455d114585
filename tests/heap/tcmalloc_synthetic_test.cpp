// The tcmalloc walker on a hand-laid heap (tests/support/synthetic_tcmalloc.h): the exact walk of
// a small heap that has every kind of span and free list, tcmalloc linked into an executable, and
// one damaged heap per case (loops, lists that leave their class, absurd lengths, leaves that
// overlap or are cut), each of which must cost a warning and leave the rest of the walk intact.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "support/heap_walk.h"
#include "support/synthetic_tcmalloc.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

using namespace dumpsift;
using H = dumpsift::test::TcmallocHeap;

namespace {

constexpr const char *kLibrary = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10";

/// The hand-laid heap in a snapshot: the image's data is a writable mapping of `image`, the rest
/// anonymous; every region is captured whole (zeros past the bytes written) unless cut().
class TcmallocProcess : public test::FakeMemory {
public:
  explicit TcmallocProcess(std::string image = kLibrary) : image_(std::move(image)) {
    addRegion(H::kData, H::kDataSize);
    addRegion(H::kMeta, H::kMetaSize);
    addRegion(H::kLeaf, H::kLeafSize);
    addRegion(H::kHeap, H::kHeapSize);
    test::putTcmallocHeap(*this);
  }

  /// Captures only the first `bytes` of the region at `start`.
  void cut(uint64_t start, uint64_t bytes) { cut_[start] = bytes; }

  const Snapshot &snapshot() {
    snap_ = Snapshot();
    for (auto &[start, region] : regions()) {
      region.bytes.resize(region.size);
      Region r;
      r.start = start;
      r.size = region.size;
      r.captured = cut_.count(start) ? cut_[start] : region.size;
      r.perms.read = r.perms.write = true;
      r.backing_file = start == H::kData ? image_ : "";
      r.cls = r.backing_file.empty() ? RegionClass::Anonymous : RegionClass::Image;
      snap_.regions.push_back(r);
      snap_.memory.push_back({start, llvm::ArrayRef<uint8_t>(region.bytes).take_front(r.captured)});
      if (!r.backing_file.empty())
        snap_.modules.push_back({r.backing_file, r.start, r.end(), ""});
    }
    return snap_;
  }

private:
  std::string image_;
  std::map<uint64_t, uint64_t> cut_;
  Snapshot snap_;
};

/// The tcmalloc walker's walk of the process as it is now.
test::WalkedHeap walk(TcmallocProcess &process) {
  return test::walkHeap(test::walkerNamed("tcmalloc"), process.snapshot());
}

/// The state of the allocation at `address`, which must be one.
AllocState stateAt(const test::WalkedHeap &w, uint64_t address) {
  const Allocation *a = w.at(address);
  REQUIRE(a != nullptr);
  return a->state;
}

bool contains(std::initializer_list<unsigned> list, unsigned k) {
  return std::find(list.begin(), list.end(), k) != list.end();
}

} // namespace

TEST_CASE("tcmalloc walker: the hand-laid heap, exactly") {
  TcmallocProcess process;
  {
    AddressSpace memory(process.snapshot());
    CHECK(test::walkerNamed("tcmalloc").detect(memory));
  }
  test::WalkedHeap w = walk(process);
  REQUIRE(w.error.empty());
  CHECK(w.warnings.empty());
  CHECK(w.result.size_classes);

  // The small span: 32 objects of 256 bytes; free exactly those its list, the thread cache and
  // the transfer slot hold.
  REQUIRE(w.allocations.size() == 32 + 5);
  for (unsigned k = 0; k < 32; ++k) {
    INFO("object " << k);
    const Allocation &a = w.allocations[k];
    CHECK(a.address == H::object(k));
    CHECK(a.size == 256);
    CHECK(a.arena == H::spanAddress(H::kSmall));
    CHECK_FALSE(a.whole_pages);
    const bool free = contains({3, 7, 10, 11, 20, 21, 22, 23}, k);
    CHECK(a.state == (free ? AllocState::Free : AllocState::Used));
  }
  struct Expect {
    unsigned span;
    uint64_t size;
    AllocState state;
    bool whole_pages;
  };
  const Expect others[] = {{H::kLarge, 40 * H::kPage, AllocState::Used, true},
                           {H::kFree, 3 * H::kPage, AllocState::Free, true},
                           {H::kSampled, 4096, AllocState::Used, false},
                           {H::kSingle, 65536, AllocState::Used, false},
                           {H::kReturned, 8 * H::kPage, AllocState::Free, true}};
  for (size_t i = 0; i < std::size(others); ++i) {
    INFO("span " << others[i].span);
    const Allocation &a = w.allocations[32 + i];
    CHECK(a.address == H::spanAddress(others[i].span));
    CHECK(a.size == others[i].size);
    CHECK(a.state == others[i].state);
    CHECK(a.whole_pages == others[i].whole_pages);
    CHECK(a.arena == a.address);
  }
  CHECK(w.allocations[32 + 2].chunk_size == H::kPage); // the sampled span is a whole page

  CHECK(w.result.stats.used_count == 24 + 3);
  CHECK(w.result.stats.free_count == 8 + 2);
  REQUIRE(w.result.areas.size() == 2); // sorted by start: the leaf lies below the heap
  CHECK(w.result.areas[0].kind == "pagemap-leaf");
  CHECK(w.result.areas[0].start == H::kLeaf);
  CHECK(w.result.areas[0].size == H::kLeafSize);
  CHECK(w.result.areas[1].kind == "page-heap");
  CHECK(w.result.areas[1].start == H::kHeap);
  CHECK(w.result.areas[1].size == 61 * H::kPage);
  CHECK(w.fact("globals_in") == kLibrary);
  CHECK(w.fact("size_map") == hexAddress(H::kSizeMap));
  CHECK(w.fact("central_cache") == hexAddress(H::kCentral));
  CHECK(w.fact("pagemap_root") == hexAddress(H::kRoot));
  CHECK(w.fact("size_classes") == "10");
  CHECK(w.fact("small_spans") == "2");
  CHECK(w.fact("large_spans") == "1");
  CHECK(w.fact("sampled_spans") == "1");
  CHECK(w.fact("free_spans") == "1");
  CHECK(w.fact("returned_spans") == "1");
  CHECK(w.fact("thread_caches") == "1");
  CHECK(w.fact("free_in_thread_caches") == "2");
  CHECK(w.fact("free_in_transfer_slots") == "4");
}

TEST_CASE("tcmalloc walker: tcmalloc linked into the executable is found by its data") {
  TcmallocProcess process("/opt/app/server");
  AddressSpace memory(process.snapshot());
  CHECK(test::walkerNamed("tcmalloc").detect(memory));
  test::WalkedHeap w = walk(process);
  REQUIRE(w.error.empty());
  CHECK(w.fact("globals_in") == "/opt/app/server");
  CHECK(w.allocations.size() == 37);
}

TEST_CASE("tcmalloc walker: no tcmalloc, or none that can be walked") {
  SECTION("a process without tcmalloc is not detected") {
    TcmallocProcess process("/opt/app/server");
    process.put32(H::kSizeMap + 0xa7c + 4 * 9, 200000); // the largest class is not kMaxSize
    AddressSpace memory(process.snapshot());
    CHECK_FALSE(test::walkerNamed("tcmalloc").detect(memory));
  }
  SECTION("the debug allocator is refused") {
    TcmallocProcess process("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal_debug.so.4.5.10");
    test::WalkedHeap w = walk(process);
    CHECK(w.error.find("debug allocator") != std::string::npos);
  }
  SECTION("no span on a central list: the page map cannot be located") {
    TcmallocProcess process;
    test::putSpanList(process, H::kCentral + 1216 * 5 + 0x40, 0);
    test::putSpanList(process, H::kCentral + 1216 * 8 + 0x10, 0);
    test::WalkedHeap w = walk(process);
    CHECK(w.error.find("no span on any of tcmalloc's central free lists") != std::string::npos);
  }
  SECTION("two size maps: the first is walked, with a warning") {
    TcmallocProcess process;
    std::vector<uint8_t> &data = process.regions().at(H::kData).bytes;
    data.resize(H::kDataSize);
    std::memcpy(&data[0x10c000], &data[H::kSizeMap - H::kData], 0x1088);
    test::WalkedHeap w = walk(process);
    REQUIRE(w.error.empty());
    CHECK(w.warned("1 more tcmalloc size maps"));
    CHECK(w.allocations.size() == 37);
  }
}

TEST_CASE("tcmalloc walker: damage costs a warning and only what it touches") {
  TcmallocProcess process;
  test::WalkedHeap w;
  SECTION("the span's free list leaves the span") {
    process.put64(H::object(3), H::kHeap + 0x90000);
    w = walk(process);
    CHECK(w.warned("free list of the span at " + hexAddress(H::kHeap) + " is cut at " +
                   hexAddress(H::kHeap + 0x90000)));
    CHECK(w.warned("counts 30 objects handed out, but 1 of its 32"));
    CHECK(stateAt(w, H::object(3)) == AllocState::Free);
    CHECK(stateAt(w, H::object(7)) == AllocState::Used); // cut off the list: nothing says free
  }
  SECTION("the span's free list loops") {
    process.put64(H::object(7), H::object(3));
    w = walk(process);
    CHECK(w.warned("is cut at " + hexAddress(H::object(3)) +
                   ": not an object of the span, or "
                   "seen twice"));
    CHECK(stateAt(w, H::object(7)) == AllocState::Free);
  }
  SECTION("a thread cache list claims an absurd length") {
    process.put32(H::kThreadCache + 0x20 * 5 + 8, 100000);
    w = walk(process);
    CHECK(w.warned("its length 100000 is above the most tcmalloc keeps"));
    CHECK(stateAt(w, H::object(10)) == AllocState::Used);
    CHECK(stateAt(w, H::object(20)) == AllocState::Free);
  }
  SECTION("a thread cache list runs into another class's object") {
    process.put32(H::kThreadCache + 0x20 * 5 + 8, 3);
    process.put64(H::object(11), H::spanAddress(H::kSingle));
    w = walk(process);
    CHECK(w.warned(hexAddress(H::spanAddress(H::kSingle)) +
                   " is not a 256-byte object of a span in use"));
    CHECK(stateAt(w, H::object(11)) == AllocState::Free);
    CHECK(stateAt(w, H::spanAddress(H::kSingle)) == AllocState::Used);
  }
  SECTION("a thread cache list is longer than its length") {
    process.put32(H::kThreadCache + 0x20 * 5 + 8, 1);
    w = walk(process);
    CHECK(w.warned("its chain is longer than 1 objects"));
    CHECK(stateAt(w, H::object(10)) == AllocState::Free);
  }
  SECTION("the thread cache list loops") {
    process.put64(H::kThreadCache + 0x1030, H::kThreadCache);
    w = walk(process);
    CHECK(w.warnings.empty()); // a cache seen twice is read once
    CHECK(w.fact("thread_caches") == "1");
    CHECK(stateAt(w, H::object(10)) == AllocState::Free);
  }
  SECTION("a transfer slot holds fewer objects than a batch") {
    process.put64(H::object(22), 0);
    w = walk(process);
    CHECK(w.warned("transfer slot 0 of the central list of class 5 (256 bytes) is cut: its chain "
                   "ends after 3 of 4 objects"));
    CHECK(stateAt(w, H::object(22)) == AllocState::Free);
    CHECK(stateAt(w, H::object(23)) == AllocState::Used);
  }
  SECTION("a span claims more pages than the page map holds") {
    process.put64(H::descriptor(H::kLarge) + 8, uint64_t(1) << 40);
    w = walk(process);
    CHECK(w.warned("span at " + hexAddress(H::spanAddress(H::kLarge)) + " is not walked: length " +
                   std::to_string(uint64_t(1) << 40) + " pages leaves the page map"));
    CHECK(w.at(H::spanAddress(H::kLarge)) == nullptr);
    CHECK(w.at(H::spanAddress(H::kReturned)) != nullptr); // later spans stay
  }
  SECTION("a span of a class that does not exist") {
    process.put8(H::descriptor(H::kSingle) + 0x2a, 200);
    w = walk(process);
    CHECK(w.warned("size class 200 is not below 10"));
    CHECK(w.at(H::spanAddress(H::kSingle)) == nullptr);
  }
  SECTION("a span of the wrong length for its class") {
    process.put64(H::descriptor(H::kSingle) + 8, 5);
    w = walk(process);
    CHECK(w.warned("5 pages where size class 8 has spans of 8"));
  }
  SECTION("a span over memory the process did not map") {
    process.put64(H::descriptor(H::kReturned) + 8, 200);
    w = walk(process);
    CHECK(w.warned("are not mapped"));
    CHECK(w.at(H::spanAddress(H::kReturned)) == nullptr);
  }
  SECTION("a sampled span whose stack trace is gone") {
    process.put64(H::descriptor(H::kSampled) + 0x20, 0x6000000);
    w = walk(process);
    CHECK(w.warned("has no readable stack trace"));
    CHECK(w.at(H::spanAddress(H::kSampled))->size == H::kPage);
  }
  SECTION("two root entries point at one leaf") {
    process.put64(H::kRoot + 8 * 2, H::kLeaf);
    w = walk(process);
    CHECK(w.warned("overlaps another leaf; its pages are not walked"));
    CHECK(w.allocations.size() == 37);
  }
  SECTION("the leaf is cut short in the dump") {
    process.cut(H::kLeaf, 8 * 44);
    w = walk(process);
    CHECK(w.warned("is captured for 44 of its 262144 pages only"));
    CHECK(w.at(H::spanAddress(H::kFree)) != nullptr);
    CHECK(w.at(H::spanAddress(H::kSampled)) == nullptr);
  }
  SECTION("a central list was locked at dump time") {
    process.put32(H::kCentral + 1216 * 6, 1);
    w = walk(process);
    CHECK(w.warned("1 central free lists were locked when the dump was taken"));
    CHECK(w.allocations.size() == 37);
  }
  REQUIRE(w.error.empty());
  // Whatever the damage, what is reported stays in order and inside the page heap.
  for (size_t i = 1; i < w.allocations.size(); ++i)
    CHECK(w.allocations[i - 1].address + w.allocations[i - 1].chunk_size <=
          w.allocations[i].address);
}
