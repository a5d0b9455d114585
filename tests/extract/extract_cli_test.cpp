// `dumpsift analyze --extract` and `dumpsift extract` end to end, through the tool binary, on the
// story: the committed core (files, kinds, decodable JPEGs, JSON bodies, the report's section, the
// errors) and a live story process dumped with gcore (every file against the planted bytes, read
// from the live process's memory).
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

using namespace dumpsift;
using namespace dumpsift::test;
namespace stdfs = std::filesystem;

namespace {

using ByteVec = std::vector<uint8_t>;

/// Runs the tool with `args` (already quoted as needed).
CommandResult tool(const std::string &args) {
  return runCommand("'" + toolPath() + "' " + args);
}

/// The story's planted buffers, as the committed core's manifest lists them.
std::vector<nlohmann::json> storyManifest() {
  return readJsonLines(sourceDir() + "/fixtures/cores/story.manifest.jsonl");
}

/// sha256sum's digest of `bytes`.
std::string sha256Of(const ByteVec &bytes) {
  const std::string path = scratchDir("extract-cli-sha") + "/bytes";
  writeFileBytes(path, bytes);
  return sha256sum(path);
}

/// Manifest entries by (address, role, body).
struct Entries {
  std::map<std::tuple<std::string, std::string, int>, nlohmann::json> by_key;
  explicit Entries(const std::vector<nlohmann::json> &manifest) {
    for (const nlohmann::json &m : manifest)
      by_key[{m["address"], m["role"], m.value("body", 0)}] = m;
  }
  /// The entry, or null JSON.
  nlohmann::json get(const std::string &address, const std::string &role, int body = 0) const {
    auto it = by_key.find({address, role, body});
    return it == by_key.end() ? nlohmann::json() : it->second;
  }
};

/// A tool error: exit code 2 and exactly one line "dumpsift: error: ...".
void checkOneLineError(const CommandResult &r) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("dumpsift: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

/// Every file in `dir` is the manifest or listed in it, whole (size and SHA-256), and no temporary
/// file is left: what a stopped extraction keeps.
void checkOnlyCompleteFiles(const std::string &dir) {
  std::vector<nlohmann::json> manifest = readJsonLines(dir + "/manifest.jsonl");
  std::vector<std::string> expected{"manifest.jsonl"};
  for (const nlohmann::json &m : manifest) {
    const std::string path = dir + "/" + m["path"].get<std::string>();
    CHECK(stdfs::file_size(path) == m["size"].get<uint64_t>());
    CHECK(sha256sum(path) == m["sha256"]);
    expected.push_back(m["path"]);
  }
  std::sort(expected.begin(), expected.end());
  CHECK(listDir(dir) == expected);
}

enum class Decoded { Ok, Warning, Failed };

/// Decodes a JPEG file with libjpeg-turbo at full size.
Decoded decodeJpeg(const std::string &path) {
  const ByteVec jpeg = readFileBytes(path);
  tjhandle h = tjInitDecompress();
  REQUIRE(h != nullptr);
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  const auto size = static_cast<unsigned long>(jpeg.size());
  Decoded result = Decoded::Failed;
  if (tjDecompressHeader3(h, jpeg.data(), size, &width, &height, &subsamp, &colorspace) == 0) {
    std::vector<unsigned char> pixels(size_t(width) * height * 3);
    if (tjDecompress2(h, jpeg.data(), size, pixels.data(), width, 0, height, TJPF_RGB, 0) == 0)
      result = Decoded::Ok;
    else if (tjGetErrorCode(h) == TJERR_WARNING)
      result = Decoded::Warning;
  }
  tjDestroy(h);
  return result;
}

/// `n` bytes at `address` of a live process.
ByteVec processBytes(pid_t pid, uint64_t address, size_t n) {
  const std::string path = "/proc/" + std::to_string(pid) + "/mem";
  int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ByteVec bytes(n);
  ssize_t got = pread(fd, bytes.data(), n, static_cast<off_t>(address));
  close(fd);
  REQUIRE(got == static_cast<ssize_t>(n));
  return bytes;
}

ByteVec slice(const ByteVec &v, size_t from, size_t n) {
  REQUIRE(from + n <= v.size());
  return ByteVec(v.begin() + from, v.begin() + from + n);
}

/// Size of "<hex size>;chunk-signature=<64 hex>\r\n" for the story's 128 KiB chunks.
constexpr size_t kAwsHeader = 88;

} // namespace

TEST_CASE("extract CLI: the story core, every planted buffer as a file people can open") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::string base = scratchDir("extract-cli-story");
  const std::string dir = base + "/out", report = base + "/report.json";
  CommandResult r =
      tool("analyze '" + core + "' --extract '" + dir + "' --report '" + report + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Extracted ") != std::string::npos);

  std::vector<nlohmann::json> manifest = readJsonLines(dir + "/manifest.jsonl");
  checkOnlyCompleteFiles(dir);
  Entries entries(manifest);
  for (const nlohmann::json &p : storyManifest()) {
    INFO(p.dump());
    const std::string address = p["address"], name = p["name"];
    const nlohmann::json b = entries.get(address, "buffer");
    REQUIRE(b.is_object());
    if (name != "random" && name != "zeros" && name != "json") // the statistical sniffers' call
      CHECK(b["kind"] == p["kind"]);
    const std::string file = dir + "/" + b["path"].get<std::string>();
    CHECK(b["path"].get<std::string>().rfind(
              address + "-" + std::to_string(b["size"].get<uint64_t>()) + ".", 0) == 0);
    if (name == "jpeg-slice") {
      CHECK(b["truncated"] == true);
      CHECK(decodeJpeg(file) == Decoded::Warning);
    } else if (name == "aws-chunk") {
      CHECK(b["size"] == p["requested"]);
      const nlohmann::json payload = entries.get(address, "payload");
      REQUIRE(payload.is_object());
      CHECK(payload["size"] == 131072);
      CHECK(payload["offset"] == kAwsHeader);
      const std::string payload_file = dir + "/" + payload["path"].get<std::string>();
      CHECK(readFileBytes(payload_file) == slice(readFileBytes(file), kAwsHeader, 131072));
      if (p.contains("payload_kind")) {
        CHECK(payload["kind"] == "jpeg");
        CHECK(payload["truncated"] == true); // the first 128 KiB of a larger image
        CHECK(decodeJpeg(payload_file) == Decoded::Warning);
      }
    } else if (name == "aws-final-chunk") {
      // "0;chunk-signature=<64>\r\n\r\n" and the stale rest of the frame it was written over.
      CHECK(b["size"] == p["requested"]);
      CHECK(b["details"]["stale_bytes"] == p["requested"].get<uint64_t>() - 86);
      CHECK_FALSE(entries.get(address, "payload").is_object());
    } else if (name == "amqp-publish") {
      CHECK(b["size"] == p["requested"]);
      const nlohmann::json body = entries.get(address, "body", 1);
      REQUIRE(body.is_object());
      CHECK(body["kind"] == "json");
      const ByteVec text = readFileBytes(dir + "/" + body["path"].get<std::string>());
      CHECK_NOTHROW(nlohmann::json::parse(text.begin(), text.end()));
      // The body is the last frame's payload: just before the frame-end byte.
      const ByteVec frames = readFileBytes(file);
      CHECK(text == slice(frames, frames.size() - 1 - text.size(), text.size()));
    } else if (name == "png") {
      CHECK(b["size"] == p["requested"]);
      CHECK(b["truncated"] == false);
    }
  }

  // The report's section lists the same files, with the directory in the path, and validates.
  CommandResult v =
      runCommand("/usr/bin/python3 '" + sourceDir() + "/scripts/validate_report.py' '" +
                 sourceDir() + "/docs/report.schema.json' '" + report + "'");
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  std::ifstream in(report);
  nlohmann::json j = nlohmann::json::parse(in);
  REQUIRE(j["extracted"].size() == manifest.size());
  for (size_t i = 0; i < manifest.size(); ++i) {
    CHECK(j["extracted"][i]["path"] == dir + "/" + manifest[i]["path"].get<std::string>());
    CHECK(j["extracted"][i]["sha256"] == manifest[i]["sha256"]);
  }

  // Deterministic: a second run writes the same manifest.
  REQUIRE(tool("analyze '" + core + "' -q --extract '" + base + "/again'").exit_code == 0);
  CHECK(readFileBytes(base + "/again/manifest.jsonl") == readFileBytes(dir + "/manifest.jsonl"));

  SECTION("filters: --kind and --group") {
    REQUIRE(tool("analyze '" + core + "' -q --kind jpeg --extract '" + base + "/jpeg'").exit_code ==
            0);
    for (const nlohmann::json &m : readJsonLines(base + "/jpeg/manifest.jsonl"))
      CHECK(m["kind"] == "jpeg");
    REQUIRE(
        tool("analyze '" + core + "' -q --group 266224 --extract '" + base + "/zeros'").exit_code ==
        0);
    std::vector<nlohmann::json> zeros = readJsonLines(base + "/zeros/manifest.jsonl");
    CHECK(zeros.size() == 3);
    for (const nlohmann::json &m : zeros)
      CHECK(m["kind"] == "zero");
  }
  SECTION("--dedupe: the three zero buffers become one file listing three addresses") {
    REQUIRE(tool("analyze '" + core + "' -q --dedupe --group 266224 --extract '" + base + "/dd'")
                .exit_code == 0);
    std::vector<nlohmann::json> dd = readJsonLines(base + "/dd/manifest.jsonl");
    REQUIRE(dd.size() == 1);
    CHECK(dd[0]["addresses"].size() == 3);
    CHECK(listDir(base + "/dd").size() == 2);
  }
  SECTION("dumpsift extract: any address inside the allocation, --payload, --body, --json") {
    const nlohmann::json aws = storyManifest()[8];
    REQUIRE(aws["name"] == "aws-chunk");
    const uint64_t a = *parseHexAddress(aws["address"].get<std::string>());
    const std::string inside = hexAddress(a + 5000);
    CommandResult one =
        tool("extract '" + core + "' --address " + inside + " --out '" + base + "/one.bin'");
    INFO(one.err);
    REQUIRE(one.exit_code == 0);
    const nlohmann::json b = entries.get(aws["address"], "buffer");
    CHECK(readFileBytes(base + "/one.bin") ==
          readFileBytes(dir + "/" + b["path"].get<std::string>()));
    CHECK(tool("extract '" + core + "' --address " + inside + " --out '" + base + "/one.bin'")
              .exit_code == 2); // exists: --force needed
    CommandResult payload = tool("extract '" + core + "' --address " + inside +
                                 " --payload --json --out '" + base + "/payload.jpg'");
    REQUIRE(payload.exit_code == 0);
    nlohmann::json line = nlohmann::json::parse(payload.out);
    CHECK(line["role"] == "payload");
    CHECK(line["kind"] == "jpeg");
    CHECK(line["sha256"] == sha256sum(base + "/payload.jpg"));

    const nlohmann::json amqp = storyManifest()[18];
    REQUIRE(amqp["name"] == "amqp-publish");
    CommandResult body =
        tool("extract '" + core + "' --address " + amqp["address"].get<std::string>() +
             " --body 1 --out '" + base + "/body.json'");
    REQUIRE(body.exit_code == 0);
    const nlohmann::json expected = entries.get(amqp["address"], "body", 1);
    CHECK(readFileBytes(base + "/body.json") ==
          readFileBytes(dir + "/" + expected["path"].get<std::string>()));
    checkOneLineError(tool("extract '" + core + "' --address " +
                           amqp["address"].get<std::string>() + " --body 2 --out '" + base +
                           "/body2.json'"));
    checkOneLineError(tool("extract '" + core + "' --address 0x10 --out '" + base + "/none'"));
    CHECK_FALSE(stdfs::exists(base + "/none"));
  }
}

TEST_CASE("extract CLI: clear errors, and nothing partial left behind") {
  const std::string core = unpackedFixture("cores/story.core.xz");
  const std::string base = scratchDir("extract-cli-errors");

  SECTION("a directory that is not empty") {
    stdfs::create_directories(base + "/full");
    writeFileBytes(base + "/full/notes.txt", {'h', 'i'});
    CommandResult r = tool("analyze '" + core + "' -q --extract '" + base + "/full'");
    checkOneLineError(r);
    CHECK(r.err.find("not empty") != std::string::npos);
    CHECK(listDir(base + "/full") == std::vector<std::string>{"notes.txt"});
  }
  SECTION("a read-only directory") {
    const std::string dir = base + "/readonly";
    stdfs::create_directories(dir);
    REQUIRE(chmod(dir.c_str(), 0555) == 0);
    // root writes anywhere: run the tool as nobody then.
    const std::string as =
        geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    CommandResult r =
        runCommand(as + "'" + toolPath() + "' analyze '" + core + "' -q --extract '" + dir + "'");
    checkOneLineError(r);
    CHECK(r.err.find("cannot write into the directory") != std::string::npos);
    CHECK(listDir(dir).empty());
    chmod(dir.c_str(), 0755);
  }
  SECTION("--max-bytes") {
    CommandResult r =
        tool("analyze '" + core + "' -q --max-bytes 300K --extract '" + base + "/limit'");
    checkOneLineError(r);
    CHECK(r.err.find("byte limit reached") != std::string::npos);
    CHECK(r.err.find("manifest.jsonl") != std::string::npos);
    checkOnlyCompleteFiles(base + "/limit");
    uint64_t total = 0;
    std::vector<nlohmann::json> kept = readJsonLines(base + "/limit/manifest.jsonl");
    for (const nlohmann::json &m : kept)
      total += m["size"].get<uint64_t>();
    CHECK(!kept.empty());
    CHECK(total <= 300 * 1024);
  }
  SECTION("--max-files") {
    CommandResult r =
        tool("analyze '" + core + "' -q --max-files 4 --extract '" + base + "/files'");
    checkOneLineError(r);
    CHECK(r.err.find("file limit reached") != std::string::npos);
    checkOnlyCompleteFiles(base + "/files");
    CHECK(listDir(base + "/files").size() == 5);
  }
  SECTION("a write that fails midway (the file size limit stands in for a full disk)") {
    // Files of at most 132 KiB can be written; the first larger one fails while being written.
    CommandResult r =
        runCommand("bash -c \"trap '' XFSZ; ulimit -f 132; exec '" + toolPath() + "' analyze '" +
                   core + "' -q --extract '" + base + "/full-disk'\"");
    checkOneLineError(r);
    CHECK(r.err.find("File too large") != std::string::npos);
    checkOnlyCompleteFiles(base + "/full-disk");
    CHECK(readJsonLines(base + "/full-disk/manifest.jsonl").size() >= 1);
  }
  SECTION("extraction options need --extract") {
    CommandResult r = tool("analyze '" + core + "' -q --raw");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--raw requires --extract") != std::string::npos);
  }
}

TEST_CASE("extract CLI: a live story process, every file against the planted bytes", "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess story(fixtureProgram("story"));
  const std::string base = scratchDir("extract-cli-live");
  const std::string core = base + "/story.core", dir = base + "/out";
  story.gcore(core);
  CommandResult r = tool("analyze '" + core + "' -q --extract '" + dir + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Entries entries(readJsonLines(dir + "/manifest.jsonl"));

  std::vector<ByteVec> slices; // the JPEG slices' planted bytes, in order
  for (const nlohmann::json &p : story.manifest()) {
    INFO(p.dump());
    const std::string address = p["address"], name = p["name"];
    const size_t requested = p["requested"];
    const ByteVec planted = processBytes(story.pid(), *parseHexAddress(address), requested);
    const nlohmann::json b = entries.get(address, "buffer");
    REQUIRE(b.is_object());
    const ByteVec file = readFileBytes(dir + "/" + b["path"].get<std::string>());
    if (name == "aws-chunk" || name == "amqp-publish" || name == "png" ||
        name == "aws-final-chunk") {
      // The format gives the exact extent (a final chunk's with the stale tail behind it): the
      // file is exactly the planted bytes.
      CHECK(b["sha256"] == sha256Of(planted));
    } else {
      // Truncated JPEG slices, JSON cut by the sniffer's scan limit, zeros, random bytes: the
      // file is the allocation's content from its start, which begins with the planted bytes.
      REQUIRE(file.size() >= requested);
      CHECK(slice(file, 0, requested) == planted);
    }
    if (name == "jpeg-slice")
      slices.push_back(planted);
    if (name == "aws-chunk" && p.contains("payload_kind")) {
      // The decoded payload is exactly the chunk data inside the planted frame.
      const nlohmann::json payload = entries.get(address, "payload");
      REQUIRE(payload.is_object());
      CHECK(payload["sha256"] == sha256Of(slice(planted, kAwsHeader, 131072)));
    }
    if (name == "amqp-publish") {
      const nlohmann::json body = entries.get(address, "body", 1);
      REQUIRE(body.is_object());
      const size_t n = body["size"];
      CHECK(body["sha256"] == sha256Of(slice(planted, requested - 1 - n, n)));
    }
  }
  // aws-chunk frame k (k < 6) carries the first 128 KiB of image k % 3, as jpeg-slice k does.
  size_t k = 0;
  for (const nlohmann::json &p : story.manifest()) {
    if (p["name"] != "aws-chunk" || !p.contains("payload_kind"))
      continue;
    const nlohmann::json payload = entries.get(p["address"], "payload");
    REQUIRE(k < slices.size());
    CHECK(payload["sha256"] == sha256Of(slices[k]));
    ++k;
  }
  CHECK(k == 6);
}
