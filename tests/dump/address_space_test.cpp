#include "dumpsift/dump/address_space.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

using namespace dumpsift;

TEST_CASE("address space tells captured, not-captured and unmapped apart") {
  static const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 10, 11, 12, 13, 14, 15, 16};
  Snapshot snap;
  Region r;
  r.start = 0x1000;
  r.size = 0x1000;
  r.captured = 8;
  snap.regions.push_back(r);
  snap.memory.push_back({0x1000, llvm::ArrayRef<uint8_t>(bytes, 8)});
  snap.memory.push_back({0x1008, llvm::ArrayRef<uint8_t>(bytes + 9, 8)}); // not after the first
  AddressSpace as(snap);

  CHECK(as.classify(0x1000) == Fault::None);
  CHECK(as.classify(0x1010) == Fault::NotCaptured);
  CHECK(as.classify(0x3000) == Fault::Unmapped);
  CHECK(as.tryView(0x1004, 4) == bytes + 4);
  CHECK(as.tryView(0x1004, 8) == nullptr); // spans two memory ranges
  uint8_t out[8];
  REQUIRE_FALSE(static_cast<bool>(as.read(0x1004, out)));
  CHECK(out[0] == 5);
  CHECK(out[7] == 12);
  llvm::Error err = as.read(0x100c, out);
  REQUIRE(static_cast<bool>(err));
  CHECK(llvm::toString(std::move(err)).find("0x1010 is not captured") != std::string::npos);
  auto v = as.view(0x2ff0, 4);
  REQUIRE(!v);
  CHECK(llvm::toString(v.takeError()).find("unmapped") != std::string::npos);
  uint64_t word = 0;
  CHECK(as.readU64(0x1000, word));
  CHECK(word == 0x0807060504030201ull);
  CHECK(as.capturedRunFrom(0x1004) == 4);
}

TEST_CASE("address space reads words in either byte order, pointers and C strings") {
  static const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                  'l',  'i',  'b',  'c',  0,    'x',  'y',  'z'};
  Snapshot snap;
  snap.memory.push_back({0x1000, llvm::ArrayRef<uint8_t>(bytes)});
  AddressSpace as(snap);
  CHECK(as.readU8(0x1001) == 0x02);
  CHECK(as.readU16(0x1000) == 0x0201);
  CHECK(as.readU16(0x1000, llvm::support::big) == 0x0102);
  CHECK(as.readU32(0x1000) == 0x04030201u);
  CHECK(as.readU32(0x1000, llvm::support::big) == 0x01020304u);
  CHECK(as.readU64(0x1000) == 0x0807060504030201ull);
  CHECK(as.readU64(0x1000, llvm::support::big) == 0x0102030405060708ull);
  CHECK_FALSE(as.readU64(0x100c)); // runs past the captured bytes
  uint32_t word = 7;
  CHECK_FALSE(as.readU32(0x100e, word));
  CHECK(word == 7); // left as it was
  // A pointer is as wide, and in the byte order, as the process's words.
  CHECK(as.readPointer(0x1000) == 0x0807060504030201ull);
  snap.system.pointer_size = 4;
  snap.system.little_endian = false;
  CHECK(as.readPointer(0x1000) == 0x01020304u);
  CHECK(as.readCString(0x1008, 16) == llvm::StringRef("libc"));
  CHECK(as.readCString(0x1008, 5) == llvm::StringRef("libc")); // its NUL is the 5th byte
  CHECK_FALSE(as.readCString(0x1008, 4));                      // no NUL within 4 bytes
  CHECK_FALSE(as.readCString(0x100d, 16));                     // no NUL before the end
}

TEST_CASE("a view may cross ranges that follow each other in memory and in the file") {
  // Three adjacent mappings written one after the other (a Go arena's mappings in a gcore core),
  // then one whose bytes lie elsewhere in the file.
  static const uint8_t bytes[40] = {};
  Snapshot snap;
  snap.memory.push_back({0x1000, llvm::ArrayRef<uint8_t>(bytes, 8)});
  snap.memory.push_back({0x1008, llvm::ArrayRef<uint8_t>(bytes + 8, 8)});
  snap.memory.push_back({0x1010, llvm::ArrayRef<uint8_t>(bytes + 16, 8)});
  snap.memory.push_back({0x1018, llvm::ArrayRef<uint8_t>(bytes + 32, 8)});
  AddressSpace as(snap);
  CHECK(as.tryView(0x1004, 20) == bytes + 4);
  CHECK(as.tryView(0x1004, 21) == nullptr);
  CHECK(as.capturedRunFrom(0x1004) == 20);
  CHECK(as.capturedRunFrom(0x1004, 10) == 10);
  CHECK(as.capturedRunFrom(0x1018) == 8);
}

TEST_CASE("releasing the pages of a mapped dump keeps every read the same") {
  // A 64 KiB file mapped by llvm::MemoryBuffer, seen as one captured range at 0x10000.
  llvm::SmallString<128> path;
  int fd = -1;
  REQUIRE_FALSE(llvm::sys::fs::createTemporaryFile("release", "bin", fd, path));
  std::vector<uint8_t> content(64 * 1024);
  for (size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<uint8_t>(i * 7 + 3);
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out.write(reinterpret_cast<const char *>(content.data()), content.size());
  }
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  REQUIRE(file);
  Snapshot snap;
  snap.file = std::move(*file);
  const auto *bytes = reinterpret_cast<const uint8_t *>(snap.file->getBufferStart());
  Region r;
  r.start = 0x10000;
  r.size = content.size();
  r.captured = content.size();
  snap.regions.push_back(r);
  snap.memory.push_back({0x10000, llvm::ArrayRef<uint8_t>(bytes, content.size())});
  AddressSpace as(snap);

  const uint8_t *view = as.tryView(0x10000, content.size());
  REQUIRE(view != nullptr);
  as.releasePages(0x10000 + 100, 40000); // partial pages at both ends stay
  as.releasePages(0x8000, 0x100000);     // runs past both ends of the captured range
  as.releasePages(0x90000, 0x1000);      // not captured: nothing to do
  CHECK(std::equal(content.begin(), content.end(), view));

  // Heap memory (not a mapped file) is never released: the call does nothing.
  Snapshot heap_snap;
  heap_snap.regions.push_back(r);
  heap_snap.memory.push_back({0x10000, llvm::ArrayRef<uint8_t>(content)});
  AddressSpace heap_as(heap_snap);
  heap_as.releasePages(0x10000, content.size());
  CHECK(content[4096 * 3 + 5] == static_cast<uint8_t>((4096 * 3 + 5) * 7 + 3));
  llvm::sys::fs::remove(path);
}
