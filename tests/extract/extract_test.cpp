// The extractor on synthetic snapshots (extract_fixtures.h): buffers placed at known addresses,
// sniffed as analyze() would, then extracted. Files are compared byte for byte with what was
// placed, their SHA-256 with sha256sum's, and JPEGs are decoded with libjpeg-turbo. The manifest
// here lists names only: its JSON lines are the report layer's (tests/report/manifest_test.cpp).
#include "dumpsift/extract/extract.h"
#include "extract/extract_fixtures.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

using namespace dumpsift;
using namespace dumpsift::test;
namespace stdfs = std::filesystem;

namespace {

/// The manifest these tests write: one file name a line.
void writeNames(const Extraction &extraction, llvm::raw_ostream &out) {
  for (const ExtractedFile &file : extraction.files)
    out << file.name << '\n';
}

/// The names the manifest in `dir` lists.
std::vector<std::string> manifestNames(const std::string &dir) {
  std::ifstream in(dir + "/manifest.jsonl");
  REQUIRE(in.good());
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    names.push_back(line);
  return names;
}

enum class Decoded { Ok, Warning, Failed };

/// Decodes a JPEG with libjpeg-turbo at full size: Ok, Warning (libjpeg-turbo decoded it but
/// warned, as for a truncated file) or Failed.
Decoded decodeJpeg(const ByteVec &jpeg, std::string *message = nullptr) {
  tjhandle h = tjInitDecompress();
  REQUIRE(h != nullptr);
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  const auto size = static_cast<unsigned long>(jpeg.size());
  Decoded result = Decoded::Failed;
  if (tjDecompressHeader3(h, jpeg.data(), size, &width, &height, &subsamp, &colorspace) == 0) {
    std::vector<unsigned char> pixels(size_t(width) * height * 3);
    if (tjDecompress2(h, jpeg.data(), size, pixels.data(), width, 0, height, TJPF_RGB, 0) == 0)
      result = Decoded::Ok;
    else
      result = tjGetErrorCode(h) == TJERR_WARNING ? Decoded::Warning : Decoded::Failed;
    if (message)
      *message = tjGetErrorStr2(h);
  }
  tjDestroy(h);
  return result;
}

/// The one item of `items` with `role` (and body number), or null.
const ExtractItem *itemOf(const std::vector<ExtractItem> &items, ExtractRole role,
                          unsigned body = 0) {
  for (const ExtractItem &item : items)
    if (item.file.role == role && item.file.body == body)
      return &item;
  return nullptr;
}

ByteVec joined(const ExtractItem &item) {
  ByteVec out;
  for (llvm::ArrayRef<uint8_t> piece : item.pieces)
    append(out, piece);
  return out;
}

} // namespace

TEST_CASE("extract: items are named by address, size and kind, and hold the content") {
  Story s;
  const AddressSpace &memory = s.memory();
  REQUIRE(s.buffers[0].content.kind == ContentKind::Jpeg);
  REQUIRE(s.buffers[2].content.kind == ContentKind::Png);
  REQUIRE(s.buffers[2].content.offset == 64);
  REQUIRE(s.buffers[3].content.kind == ContentKind::AwsChunked);
  REQUIRE(s.buffers[4].content.kind == ContentKind::Amqp);

  SECTION("a complete JPEG: its own extent, not the allocation's") {
    auto items = extractItems(memory, s.buffers[0], false, true);
    REQUIRE(items.size() == 1);
    const ExtractedFile &f = items[0].file;
    CHECK(f.name == "0x100000-" + std::to_string(s.jpeg.size()) + ".jpg");
    CHECK(f.offset == 0);
    CHECK_FALSE(f.truncated);
    CHECK(joined(items[0]) == s.jpeg);
  }
  SECTION("--raw: the whole allocation") {
    auto items = extractItems(memory, s.buffers[0], true, true);
    REQUIRE(items.size() == 1);
    CHECK(items[0].file.name == "0x100000-" + std::to_string(s.jpeg.size() + 1000) + ".jpg");
    CHECK(joined(items[0]) == padded(s.jpeg, s.jpeg.size() + 1000));
  }
  SECTION("a truncated JPEG is written as it is, and says so") {
    auto items = extractItems(memory, s.buffers[1], false, true);
    REQUIRE(items.size() == 1);
    CHECK(items[0].file.truncated);
    CHECK(joined(items[0]) == ByteVec(s.jpeg.begin(), s.jpeg.begin() + s.jpeg.size() / 2));
  }
  SECTION("content at an offset is written from that offset") {
    auto items = extractItems(memory, s.buffers[2], false, true);
    REQUIRE(items.size() == 1);
    CHECK(items[0].file.offset == 64);
    CHECK(items[0].file.name == "0x300000-" + std::to_string(s.png.size()) + ".png");
    CHECK(joined(items[0]) == s.png);
  }
  SECTION("aws-chunked: the frame, then its payload with the chunk data joined") {
    auto items = extractItems(memory, s.buffers[3], false, true);
    REQUIRE(items.size() == 2);
    CHECK(items[0].file.name == "0x400000-" + std::to_string(s.aws.size()) + ".aws-chunked.bin");
    CHECK(joined(items[0]) == s.aws);
    const ExtractItem *payload = itemOf(items, ExtractRole::Payload);
    REQUIRE(payload != nullptr);
    CHECK(payload->file.name == "0x400000-" + std::to_string(s.jpeg.size()) + ".payload.jpg");
    CHECK(payload->file.kind == ContentKind::Jpeg);
    CHECK(payload->file.pieces == 2);
    CHECK_FALSE(payload->file.truncated);
    CHECK(joined(*payload) == s.jpeg);
    // Where the first chunk's data starts: after "<hex>;chunk-signature=<64>\r\n".
    CHECK(payload->file.offset == findBytes(s.aws, "\r\n") + 2);
    CHECK(extractItems(memory, s.buffers[3], false, false).size() == 1); // no decoding asked
  }
  SECTION("amqp: each message's body, its frames joined") {
    auto items = extractItems(memory, s.buffers[4], false, true);
    REQUIRE(items.size() == 3);
    CHECK(joined(items[0]) == s.amqp);
    const ExtractItem *body1 = itemOf(items, ExtractRole::Body, 1);
    const ExtractItem *body2 = itemOf(items, ExtractRole::Body, 2);
    REQUIRE(body1 != nullptr);
    REQUIRE(body2 != nullptr);
    CHECK(body1->file.pieces == 2);
    CHECK(joined(*body1) == s.json1);
    CHECK(body1->file.kind == ContentKind::Json);
    CHECK(body1->file.name == "0x500000-" + std::to_string(s.json1.size()) + ".body1.json");
    CHECK(joined(*body2) == s.json2);
    CHECK(body2->file.name == "0x500000-" + std::to_string(s.json2.size()) + ".body2.json");
  }
}

TEST_CASE("extract: every file whole, its SHA-256 recorded, JPEGs decode") {
  Story s;
  const std::string dir = scratchDir("extract-all") + "/out"; // created by the extractor
  Extraction result;
  llvm::Error e = extractBuffers(s.memory(), s.buffers, dir, ExtractOptions{}, writeNames, result);
  REQUIRE_FALSE(static_cast<bool>(e));
  REQUIRE(result.files.size() == 5 + 1 + 2); // five buffers, one payload, two bodies

  std::vector<std::string> expected_names{"manifest.jsonl"};
  std::vector<std::string> manifest = manifestNames(dir);
  REQUIRE(manifest.size() == result.files.size());
  for (size_t i = 0; i < manifest.size(); ++i) {
    const ExtractedFile &f = result.files[i];
    INFO(f.name);
    expected_names.push_back(f.name);
    CHECK(manifest[i] == f.name);
    CHECK(f.name.find('/') == std::string::npos);
    const ByteVec bytes = fileBytes(dir, f.name);
    CHECK(bytes.size() == f.size);
    CHECK(f.sha256 == sha256sum(dir + "/" + f.name));
    CHECK(f.addresses.empty()); // only with dedupe
  }
  std::sort(expected_names.begin(), expected_names.end());
  CHECK(listDir(dir) == expected_names); // no temporary files left behind

  const std::string j = std::to_string(s.jpeg.size());
  CHECK(fileBytes(dir, "0x100000-" + j + ".jpg") == s.jpeg);
  CHECK(decodeJpeg(fileBytes(dir, "0x100000-" + j + ".jpg")) == Decoded::Ok);
  CHECK(fileBytes(dir, "0x400000-" + j + ".payload.jpg") == s.jpeg);
  CHECK(decodeJpeg(fileBytes(dir, "0x400000-" + j + ".payload.jpg")) == Decoded::Ok);
  CHECK(fileBytes(dir, "0x500000-" + std::to_string(s.json1.size()) + ".body1.json") == s.json1);

  // The truncated JPEG: decodes with libjpeg-turbo's warning, and its file is marked truncated.
  const std::string half = "0x200000-" + std::to_string(s.jpeg.size() / 2) + ".jpg";
  std::string warning;
  CHECK(decodeJpeg(fileBytes(dir, half), &warning) == Decoded::Warning);
  CHECK(warning.find("Premature end of JPEG file") != std::string::npos);
  bool found = false;
  for (const ExtractedFile &f : result.files)
    if (f.name == half) {
      found = true;
      CHECK(f.truncated);
      const DetailValue *truncated = f.details.get("truncated");
      REQUIRE(truncated != nullptr);
      CHECK(std::get<bool>(*truncated));
    }
  CHECK(found);
}

TEST_CASE("extract: --dedupe writes identical bytes once and lists every address") {
  DedupeStory s;
  const std::string dir = scratchDir("extract-dedupe");
  ExtractOptions options;
  options.dedupe = true;
  Extraction result;
  REQUIRE_FALSE(
      static_cast<bool>(extractBuffers(s.memory(), s.buffers, dir, options, writeNames, result)));
  CHECK(result.duplicates == 2);
  REQUIRE(result.files.size() == 2);
  CHECK(manifestNames(dir).size() == 2);
  CHECK(result.files[0].addresses == std::vector<uint64_t>{0x10000, 0x20000, 0x40000});
  CHECK(result.files[1].addresses == std::vector<uint64_t>{0x30000});
  CHECK(listDir(dir).size() == 3);
}

TEST_CASE("extract: directory checks, filters and limits") {
  Story s;
  const AddressSpace &memory = s.memory();
  const std::string base = scratchDir("extract-checks");
  Extraction result;

  SECTION("a non-empty directory is refused unless forced") {
    const std::string dir = base + "/full";
    stdfs::create_directories(dir);
    writeFileBytes(dir + "/keep.txt", bytesOf("mine"));
    llvm::Error e = extractBuffers(memory, s.buffers, dir, ExtractOptions{}, writeNames, result);
    REQUIRE(static_cast<bool>(e));
    CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("not empty"));
    CHECK(listDir(dir) == std::vector<std::string>{"keep.txt"});
    ExtractOptions force;
    force.force = true;
    REQUIRE_FALSE(
        static_cast<bool>(extractBuffers(memory, s.buffers, dir, force, writeNames, result)));
    CHECK(listDir(dir).size() == 1 + 8 + 1);
    CHECK(fileBytes(dir, "keep.txt") == bytesOf("mine"));
  }
  SECTION("a file where the directory should be") {
    writeFileBytes(base + "/file", bytesOf("x"));
    llvm::Error e =
        extractBuffers(memory, s.buffers, base + "/file", ExtractOptions{}, writeNames, result);
    REQUIRE(static_cast<bool>(e));
    CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("not a directory"));
  }
  SECTION("--group keeps one exact size") {
    ExtractOptions options;
    options.group_size = s.buffers[3].allocation.size; // the aws-chunked buffer
    REQUIRE_FALSE(static_cast<bool>(
        extractBuffers(memory, s.buffers, base + "/g", options, writeNames, result)));
    REQUIRE(result.files.size() == 2);
    CHECK(result.files[0].kind == ContentKind::AwsChunked);
    CHECK(result.files[1].role == ExtractRole::Payload);
  }
  SECTION("--max-bytes: stops before the file that would pass it; the rest is whole") {
    ExtractOptions options;
    options.max_bytes = s.jpeg.size() + s.jpeg.size() / 2 + 10; // two JPEG files fit, not the PNG
    const std::string dir = base + "/limit";
    llvm::Error e = extractBuffers(memory, s.buffers, dir, options, writeNames, result);
    REQUIRE(static_cast<bool>(e));
    const std::string message = llvm::toString(std::move(e));
    CHECK_THAT(message, Catch::Contains("byte limit reached"));
    CHECK_THAT(message, Catch::Contains("--max-bytes"));
    CHECK_THAT(message, Catch::Contains("stopped with 2 complete files"));
    REQUIRE(result.files.size() == 2);
    std::vector<std::string> manifest = manifestNames(dir);
    REQUIRE(manifest.size() == 2);
    for (size_t i = 0; i < manifest.size(); ++i) {
      CHECK(manifest[i] == result.files[i].name);
      CHECK(result.files[i].sha256 == sha256sum(dir + "/" + manifest[i]));
    }
    CHECK(listDir(dir).size() == 3); // the two files and the manifest: nothing partial
  }
  SECTION("--max-files") {
    ExtractOptions options;
    options.max_files = 3;
    llvm::Error e = extractBuffers(memory, s.buffers, base + "/files", options, writeNames, result);
    REQUIRE(static_cast<bool>(e));
    CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("file limit reached"));
    CHECK(result.files.size() == 3);
    CHECK(listDir(base + "/files").size() == 4);
  }
}

TEST_CASE("extract: bytes the dump did not capture are not invented") {
  ByteVec jpeg = contentFixture("photo_progressive.jpg");
  SyntheticDump dump;
  // The allocation is 64 KiB but only the first half of the JPEG was captured.
  dump.place(0x70000, ByteVec(jpeg.begin(), jpeg.begin() + 10000), 0x10000);
  const AddressSpace &memory = dump.memory();
  Buffer b = bufferAt(memory, 0x70000, 0x10000);
  REQUIRE(b.captured == 10000);
  auto items = extractItems(memory, b, true, true);
  REQUIRE(items.size() == 1);
  CHECK(items[0].file.size == 10000);
  CHECK(items[0].file.truncated);
  CHECK(joined(items[0]) == ByteVec(jpeg.begin(), jpeg.begin() + 10000));

  // Nothing captured at all: no file, a warning.
  SyntheticDump empty;
  empty.place(0x80000, ByteVec(), 0x10000);
  Buffer none = bufferAt(empty.memory(), 0x80000, 0x10000);
  Extraction result;
  const std::string dir = scratchDir("extract-uncaptured");
  REQUIRE_FALSE(
      static_cast<bool>(extractBuffers(empty.memory(), {none}, dir, {}, writeNames, result)));
  CHECK(result.files.empty());
  CHECK_FALSE(result.diagnostics.empty());
  CHECK(listDir(dir) == std::vector<std::string>{"manifest.jsonl"});
}

TEST_CASE("extract: writeItem refuses to replace a file unless asked, and fails cleanly") {
  Story s;
  auto items = extractItems(s.memory(), s.buffers[0], false, true);
  REQUIRE(items.size() == 1);
  const std::string dir = scratchDir("extract-one");
  const std::string path = dir + "/photo.jpg";
  writeFileBytes(path, bytesOf("old"));
  auto refused = writeItem(items[0], path, false);
  REQUIRE_FALSE(static_cast<bool>(refused));
  CHECK_THAT(llvm::toString(refused.takeError()), Catch::Contains("already exists"));
  CHECK(readFileBytes(path) == bytesOf("old"));
  auto replaced = writeItem(items[0], path, true);
  REQUIRE(static_cast<bool>(replaced));
  CHECK(readFileBytes(path) == s.jpeg);
  CHECK(replaced->sha256 == sha256sum(path));

  auto failed = writeItem(items[0], dir + "/missing/photo.jpg", false);
  REQUIRE_FALSE(static_cast<bool>(failed));
  CHECK_THAT(llvm::toString(failed.takeError()), Catch::Contains("missing/photo.jpg"));
  CHECK(listDir(dir) == std::vector<std::string>{"photo.jpg"});
}

TEST_CASE("extract: memory does not grow with the buffer's size") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of shadow memory: an address-space limit cannot hold.
  leftOutOfThisBuild("an RLIMIT_AS limit cannot hold under AddressSanitizer");
#else
  // A 128 MiB buffer, extracted in a child process whose address space may grow by 32 MiB only:
  // any copy of the buffer (or of a large part of it) would fail there.
  constexpr size_t kSize = 128u << 20;
  void *map = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map != MAP_FAILED);
  auto *bytes = static_cast<uint8_t *>(map);
  for (size_t i = 0; i < kSize; i += 4096)
    bytes[i] = static_cast<uint8_t>(i >> 12);
  Snapshot snap;
  Region r;
  r.start = 0x10000000;
  r.size = r.captured = kSize;
  snap.regions.push_back(r);
  snap.memory.push_back({r.start, llvm::ArrayRef<uint8_t>(bytes, kSize)});
  AddressSpace memory(snap);
  Buffer b;
  b.allocation.address = r.start;
  b.allocation.size = kSize;
  b.content.kind = ContentKind::Unknown;
  b.content.length = kSize;
  const std::string dir = scratchDir("extract-memory");

  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const rlim_t limit = pages * uint64_t(sysconf(_SC_PAGESIZE)) + (32u << 20);
    rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
      _exit(3);
    Extraction result;
    ExtractOptions options;
    if (llvm::Error e = extractBuffers(memory, {b}, dir, options, writeNames, result)) {
      llvm::consumeError(std::move(e));
      _exit(1);
    }
    _exit(result.files.size() == 1 && result.files[0].size == kSize ? 0 : 2);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  munmap(map, kSize);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(stdfs::file_size(dir + "/0x10000000-134217728.bin") == kSize);
  stdfs::remove_all(dir);
#endif
}
