// The extractor on synthetic snapshots: buffers placed at known addresses, sniffed as analyze()
// would, then extracted. Files are compared byte for byte with what was placed, the manifest's
// SHA-256 with sha256sum's, and JPEGs are decoded with libjpeg-turbo. aws-chunked and AMQP bytes
// are built here from the specifications, sharing no code with src/.
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "sniff/sniff_test_util.h"

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

/// A snapshot whose memory is a set of byte vectors placed at chosen addresses (one region and
/// one memory range each). Keeps the bytes alive for the snapshot's views.
class SyntheticDump {
public:
  /// Places `bytes` at `address`; the region is `mapped` bytes long (>= bytes.size(): the rest is
  /// mapped but not captured).
  void place(uint64_t address, ByteVec bytes, uint64_t mapped = 0) {
    Region r;
    r.start = address;
    r.size = std::max<uint64_t>(mapped, bytes.size());
    r.captured = bytes.size();
    r.cls = RegionClass::Heap;
    r.perms.read = r.perms.write = true;
    storage_.push_back(std::make_unique<ByteVec>(std::move(bytes)));
    snapshot_.regions.push_back(r);
    snapshot_.memory.push_back({address, llvm::ArrayRef<uint8_t>(*storage_.back())});
  }
  /// The address space over everything placed (built on the first call: place() no more after).
  const AddressSpace &memory() {
    if (memory_)
      return *memory_;
    auto by_start = [](const auto &a, const auto &b) { return a.start < b.start; };
    std::sort(snapshot_.regions.begin(), snapshot_.regions.end(), by_start);
    std::sort(snapshot_.memory.begin(), snapshot_.memory.end(), by_start);
    memory_ = std::make_unique<AddressSpace>(snapshot_);
    return *memory_;
  }

private:
  std::vector<std::unique_ptr<ByteVec>> storage_;
  Snapshot snapshot_;
  std::unique_ptr<AddressSpace> memory_;
};

/// A used malloc-style buffer of `size` bytes at `address`, captured and sniffed as analyze() does.
Buffer bufferAt(const AddressSpace &memory, uint64_t address, uint64_t size) {
  Buffer b;
  b.allocation.address = address;
  b.allocation.size = size;
  b.allocation.chunk_address = address - 16;
  b.allocation.chunk_size = size + 16;
  b.allocation.state = AllocState::Used;
  llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, b);
  b.captured = payload.size();
  b.content = sniff(payload);
  return b;
}

/// `bytes` followed by zeros up to `size`.
ByteVec padded(ByteVec bytes, size_t size) {
  bytes.resize(size, 0);
  return bytes;
}

/// A signed aws-chunked body: one chunk per element of `chunks`, then the final chunk.
ByteVec awsChunked(const std::vector<ByteVec> &chunks) {
  const std::string signature(64, 'a');
  char head[32];
  ByteVec out;
  for (const ByteVec &c : chunks) {
    snprintf(head, sizeof head, "%zx", c.size());
    append(out, std::string(head) + ";chunk-signature=" + signature + "\r\n");
    append(out, c);
    append(out, "\r\n");
  }
  append(out, "0;chunk-signature=" + signature + "\r\n\r\n");
  return out;
}

/// An AMQP 0-9-1 frame: type, channel, size (big-endian), payload, frame-end 0xCE.
ByteVec amqpFrame(uint8_t type, uint16_t channel, const ByteVec &payload) {
  ByteVec f;
  putBe(f, type, 1);
  putBe(f, channel, 2);
  putBe(f, payload.size(), 4);
  append(f, payload);
  f.push_back(0xCE);
  return f;
}

/// basic.publish + content header + the body in frames of the given sizes.
ByteVec amqpPublish(const ByteVec &body, const std::vector<size_t> &frame_sizes) {
  ByteVec method;
  putBe(method, 60, 2);
  putBe(method, 40, 2);
  putBe(method, 0, 2);
  method.push_back(7);
  append(method, "uploads");
  method.push_back(4);
  append(method, "json");
  method.push_back(0);
  ByteVec header;
  putBe(header, 60, 2);
  putBe(header, 0, 2);
  putBe(header, body.size(), 8);
  putBe(header, 0, 2); // no properties
  ByteVec out = amqpFrame(1, 1, method);
  append(out, amqpFrame(2, 1, header));
  size_t at = 0;
  for (size_t n : frame_sizes) {
    append(out, amqpFrame(3, 1, ByteVec(body.begin() + at, body.begin() + at + n)));
    at += n;
  }
  REQUIRE(at == body.size());
  return out;
}

/// JSON text of about `n` bytes.
ByteVec jsonText(size_t n, int seed) {
  std::string s = "[";
  for (int i = 0; s.size() < n; ++i)
    s += (i ? ", " : "") + std::string("{\"id\": ") + std::to_string(i * seed) + ", \"ok\": true}";
  s += "]";
  return bytesOf(s);
}

/// The file's bytes.
ByteVec fileBytes(const std::string &dir, const std::string &name) {
  return readFileBytes(dir + "/" + name);
}

/// sha256sum's digest of a file (an implementation independent of LLVM's).
std::string sha256sum(const std::string &path) {
  CommandResult r = runCommand("sha256sum '" + path + "'");
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, 64);
}

/// The manifest's lines.
std::vector<nlohmann::json> manifestOf(const std::string &dir) {
  std::ifstream in(dir + "/manifest.jsonl");
  REQUIRE(in.good());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(nlohmann::json::parse(line));
  return lines;
}

/// The names in `dir`, sorted.
std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &entry : stdfs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
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

/// The placed content used by several tests.
struct Story {
  ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec png = contentFixture("image.png");
  ByteVec json1 = jsonText(9000, 3), json2 = jsonText(5000, 7);
  ByteVec aws, amqp;
  SyntheticDump dump;
  std::vector<Buffer> buffers;
  static constexpr uint64_t kJpeg = 0x100000, kHalfJpeg = 0x200000, kPng = 0x300000,
                            kAws = 0x400000, kAmqp = 0x500000;

  Story() {
    const size_t half = jpeg.size() / 2;
    aws = awsChunked(
        {ByteVec(jpeg.begin(), jpeg.begin() + half), ByteVec(jpeg.begin() + half, jpeg.end())});
    amqp = amqpPublish(json1, {4000, json1.size() - 4000});
    append(amqp, amqpPublish(json2, {json2.size()}));
    ByteVec png_at_64(64, 0);
    append(png_at_64, png);
    dump.place(kJpeg, padded(jpeg, jpeg.size() + 1000));
    dump.place(kHalfJpeg, ByteVec(jpeg.begin(), jpeg.begin() + half));
    dump.place(kPng, padded(png_at_64, png_at_64.size() + 300));
    dump.place(kAws, padded(aws, aws.size() + 500));
    dump.place(kAmqp, padded(amqp, amqp.size() + 700));
    const AddressSpace &memory = dump.memory();
    buffers.push_back(bufferAt(memory, kJpeg, jpeg.size() + 1000));
    buffers.push_back(bufferAt(memory, kHalfJpeg, half));
    buffers.push_back(bufferAt(memory, kPng, png_at_64.size() + 300));
    buffers.push_back(bufferAt(memory, kAws, aws.size() + 500));
    buffers.push_back(bufferAt(memory, kAmqp, amqp.size() + 700));
  }
  const AddressSpace &memory() { return dump.memory(); }
};

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

TEST_CASE("extract: every file whole, its SHA-256 in the manifest, JPEGs decode") {
  Story s;
  const std::string dir = scratchDir("extract-all") + "/out"; // created by the extractor
  Extraction result;
  llvm::Error e = extractBuffers(s.memory(), s.buffers, dir, ExtractOptions{}, result);
  REQUIRE_FALSE(static_cast<bool>(e));
  REQUIRE(result.files.size() == 5 + 1 + 2); // five buffers, one payload, two bodies

  std::vector<std::string> expected_names{"manifest.jsonl"};
  std::vector<nlohmann::json> manifest = manifestOf(dir);
  REQUIRE(manifest.size() == result.files.size());
  for (size_t i = 0; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    INFO(m.dump());
    const std::string name = m["path"];
    expected_names.push_back(name);
    CHECK(name == result.files[i].name);
    CHECK(name.find('/') == std::string::npos);
    const ByteVec bytes = fileBytes(dir, name);
    CHECK(bytes.size() == m["size"].get<uint64_t>());
    CHECK(m["sha256"] == sha256sum(dir + "/" + name));
    CHECK(m["sha256"] == result.files[i].sha256);
    CHECK(m.contains("details"));
    CHECK_FALSE(m.contains("addresses")); // only with dedupe
  }
  std::sort(expected_names.begin(), expected_names.end());
  CHECK(listDir(dir) == expected_names); // no temporary files left behind

  const std::string j = std::to_string(s.jpeg.size());
  CHECK(fileBytes(dir, "0x100000-" + j + ".jpg") == s.jpeg);
  CHECK(decodeJpeg(fileBytes(dir, "0x100000-" + j + ".jpg")) == Decoded::Ok);
  CHECK(fileBytes(dir, "0x400000-" + j + ".payload.jpg") == s.jpeg);
  CHECK(decodeJpeg(fileBytes(dir, "0x400000-" + j + ".payload.jpg")) == Decoded::Ok);
  CHECK(fileBytes(dir, "0x500000-" + std::to_string(s.json1.size()) + ".body1.json") == s.json1);

  // The truncated JPEG: decodes with libjpeg-turbo's warning, and the manifest says truncated.
  const std::string half = "0x200000-" + std::to_string(s.jpeg.size() / 2) + ".jpg";
  std::string warning;
  CHECK(decodeJpeg(fileBytes(dir, half), &warning) == Decoded::Warning);
  CHECK(warning.find("Premature end of JPEG file") != std::string::npos);
  for (const nlohmann::json &m : manifest)
    if (m["path"] == half) {
      CHECK(m["truncated"] == true);
      CHECK(m["details"]["truncated"] == true);
    }

  // The report's section: the same objects, with the directory in the path.
  Json section = extractedJson(result);
  REQUIRE(section.size() == manifest.size());
  CHECK(section[0]["path"] == dir + "/" + manifest[0]["path"].get<std::string>());
  CHECK(section[0]["sha256"] == manifest[0]["sha256"]);
}

TEST_CASE("extract: --dedupe writes identical bytes once and lists every address") {
  ByteVec jpeg = contentFixture("photo_gray.jpg");
  SyntheticDump dump;
  dump.place(0x10000, jpeg);
  dump.place(0x20000, jpeg);
  dump.place(0x30000, contentFixture("photo_baseline.jpg"));
  dump.place(0x40000, jpeg);
  const AddressSpace &memory = dump.memory();
  std::vector<Buffer> buffers{
      bufferAt(memory, 0x10000, jpeg.size()), bufferAt(memory, 0x20000, jpeg.size()),
      bufferAt(memory, 0x30000, contentFixture("photo_baseline.jpg").size()),
      bufferAt(memory, 0x40000, jpeg.size())};
  const std::string dir = scratchDir("extract-dedupe");
  ExtractOptions options;
  options.dedupe = true;
  Extraction result;
  REQUIRE_FALSE(static_cast<bool>(extractBuffers(memory, buffers, dir, options, result)));
  CHECK(result.duplicates == 2);
  std::vector<nlohmann::json> manifest = manifestOf(dir);
  REQUIRE(manifest.size() == 2);
  CHECK(manifest[0]["addresses"] == nlohmann::json({"0x10000", "0x20000", "0x40000"}));
  CHECK(manifest[1]["addresses"] == nlohmann::json({"0x30000"}));
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
    llvm::Error e = extractBuffers(memory, s.buffers, dir, ExtractOptions{}, result);
    REQUIRE(static_cast<bool>(e));
    CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("not empty"));
    CHECK(listDir(dir) == std::vector<std::string>{"keep.txt"});
    ExtractOptions force;
    force.force = true;
    REQUIRE_FALSE(static_cast<bool>(extractBuffers(memory, s.buffers, dir, force, result)));
    CHECK(listDir(dir).size() == 1 + 8 + 1);
    CHECK(fileBytes(dir, "keep.txt") == bytesOf("mine"));
  }
  SECTION("a file where the directory should be") {
    writeFileBytes(base + "/file", bytesOf("x"));
    llvm::Error e = extractBuffers(memory, s.buffers, base + "/file", ExtractOptions{}, result);
    REQUIRE(static_cast<bool>(e));
    CHECK_THAT(llvm::toString(std::move(e)), Catch::Contains("not a directory"));
  }
  SECTION("--group keeps one exact size") {
    ExtractOptions options;
    options.group_size = s.buffers[3].allocation.size; // the aws-chunked buffer
    REQUIRE_FALSE(
        static_cast<bool>(extractBuffers(memory, s.buffers, base + "/g", options, result)));
    REQUIRE(result.files.size() == 2);
    CHECK(result.files[0].kind == ContentKind::AwsChunked);
    CHECK(result.files[1].role == ExtractRole::Payload);
  }
  SECTION("--max-bytes: stops before the file that would pass it; the rest is whole") {
    ExtractOptions options;
    options.max_bytes = s.jpeg.size() + s.jpeg.size() / 2 + 10; // two JPEG files fit, not the PNG
    const std::string dir = base + "/limit";
    llvm::Error e = extractBuffers(memory, s.buffers, dir, options, result);
    REQUIRE(static_cast<bool>(e));
    const std::string message = llvm::toString(std::move(e));
    CHECK_THAT(message, Catch::Contains("byte limit reached"));
    CHECK_THAT(message, Catch::Contains("--max-bytes"));
    CHECK_THAT(message, Catch::Contains("stopped with 2 complete files"));
    REQUIRE(result.files.size() == 2);
    std::vector<nlohmann::json> manifest = manifestOf(dir);
    REQUIRE(manifest.size() == 2);
    for (const nlohmann::json &m : manifest)
      CHECK(m["sha256"] == sha256sum(dir + "/" + m["path"].get<std::string>()));
    CHECK(listDir(dir).size() == 3); // the two files and the manifest: nothing partial
  }
  SECTION("--max-files") {
    ExtractOptions options;
    options.max_files = 3;
    llvm::Error e = extractBuffers(memory, s.buffers, base + "/files", options, result);
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
  REQUIRE_FALSE(static_cast<bool>(extractBuffers(empty.memory(), {none}, dir, {}, result)));
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

#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("extract: memory does not grow with the buffer's size") {
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
    if (llvm::Error e = extractBuffers(memory, {b}, dir, options, result)) {
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
}
#endif
