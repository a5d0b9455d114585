// The story on Windows, in a full-memory minidump written by a real MiniDumpWriteDump (Wine's
// dbghelp): fixtures/windows/story_windows.c holds the story's buffers in HeapAlloc'd and
// VirtualAlloc'd memory, prints where, and dumps itself with MiniDumpWithFullMemory; the dump has
// no MemoryInfoList. The dump's facts must agree with obj2yaml-14 (LLVM's own reader) and with what
// the program printed, its two threads' stacks must be classed stack, and analyze must find the
// planted buffers with their kinds: content with a signature (AMQP frames too) at its address; a
// VirtualAlloc'd buffer as the whole allocation, its size the committed size the program printed;
// a final chunk written over a stale frame as the frame and its stale bytes; zeros and random
// bytes inside Wine's heap as runs whose estimated extents hold the planted bytes. No NT heap
// walker exists, and the test checks that the report says so. JSON text, which has no signature,
// is found by the region scan's JSON lead with the text's own extent.
//
// The dump is made by fixtures/windows/make_dump.sh (mingw-w64 and wine64, from scripts/setup.sh
// --tests) and kept under the build tree. Without those tools the tests are skipped with a visible
// warning, except under CI (CI set), where they fail.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Runs make_dump.sh (once per run of this binary) and returns the dump's path, or "" when it
/// cannot be made here: then the test is skipped (availableOrSkipped: a failure under CI) and
/// the caller returns.
std::string preparedDump() {
  static std::string why_not;
  static const std::string dump = [] {
    std::string out = binaryDir() + "/windows-fixtures";
    // Under a caller with a large environment, as a CI runner may be: the dump must not hold
    // it (the program's C runtime copies its environment into the heap, wide and narrow).
    CommandResult r = runCommand("DUMPSIFT_CALLER_ENVIRONMENT=\"$(head -c 40000 /dev/zero | tr "
                                 "'\\0' x)\" bash '" +
                                 sourceDir() + "/fixtures/windows/make_dump.sh' '" + out + "' '" +
                                 fixtureProgram("story") + "'");
    if (r.exit_code == 0) {
      if (r.out.find("wrote") != std::string::npos) // made now: say how long Wine took
        WARN(r.out);
      return out + "/story.dmp";
    }
    why_not = "make_dump.sh failed (" + std::to_string(r.exit_code) + "): " + r.err + r.out;
    return std::string();
  }();
  if (!availableOrSkipped(!dump.empty(), "no Wine minidump (scripts/setup.sh --tests installs "
                                         "wine64 and mingw-w64): " +
                                             why_not))
    return "";
  return dump;
}

/// The dump, opened, with the lines the program printed.
struct WineDump {
  std::string path;
  std::vector<nlohmann::json> manifest;
  std::unique_ptr<Snapshot> snapshot;

  /// False when the dump cannot be made here (see preparedDump).
  bool open() {
    path = preparedDump();
    if (path.empty())
      return false;
    std::ifstream in(path.substr(0, path.size() - 4) + ".manifest.jsonl");
    REQUIRE(in.good());
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        manifest.push_back(nlohmann::json::parse(line));
    REQUIRE(manifest.size() > 3);
    auto opened = openDump(path);
    if (!opened)
      FAIL(llvm::toString(opened.takeError()));
    snapshot = std::move(*opened);
    return true;
  }
};

uint64_t addressOf(const nlohmann::json &j, const char *key) {
  std::optional<uint64_t> a = parseHexAddress(j[key].get<std::string>());
  REQUIRE(a);
  return *a;
}

/// What obj2yaml-14 says about the dump: the stream types, the header flags, and the fields of the
/// streams the test compares.
struct Yaml {
  std::vector<std::string> streams;
  std::string flags, arch, platform;
  std::vector<std::pair<uint64_t, uint64_t>> threads;               // (id, environment block)
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> modules; // (base, size, name)
  std::vector<uint8_t> memory64, misc_info;                         // raw stream contents
};

uint64_t yamlNumber(llvm::StringRef value) {
  uint64_t n = 0;
  REQUIRE_FALSE(value.trim().getAsInteger(0, n));
  return n;
}

std::vector<uint8_t> yamlHex(llvm::StringRef value) {
  std::string bytes;
  REQUIRE(llvm::tryGetFromHex(value.trim().trim('\''), bytes));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

Yaml readObj2yaml(const std::string &dump) {
  std::string path = scratchDir("wine-obj2yaml") + "/story.yaml";
  CommandResult r = runCommand("obj2yaml-14 '" + dump + "' > '" + path + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Yaml y;
  std::ifstream in(path);
  std::string current;
  for (std::string text; std::getline(in, text);) {
    llvm::StringRef line(text);
    auto [key, value] = line.trim().split(':');
    key = key.ltrim("- ");
    value = value.trim();
    if (line.startswith("  - Type:")) {
      current = value.str();
      y.streams.push_back(current);
    } else if (line.startswith("Flags:")) {
      y.flags = value.str();
    } else if (key == "Processor Arch") {
      y.arch = value.str();
    } else if (key == "Platform ID") {
      y.platform = value.str();
    } else if (key == "Thread Id") {
      y.threads.push_back({yamlNumber(value), 0});
    } else if (key == "Environment Block" && !y.threads.empty()) {
      y.threads.back().second = yamlNumber(value);
    } else if (key == "Base of Image" && current == "ModuleList") {
      y.modules.push_back({yamlNumber(value), 0, ""});
    } else if (key == "Size of Image" && current == "ModuleList") {
      std::get<1>(y.modules.back()) = yamlNumber(value);
    } else if (key == "Module Name" && current == "ModuleList") {
      // Single-quoted YAML: the name itself holds ':' (a drive letter), so take the whole rest.
      llvm::StringRef name = line.split(':').second.trim();
      std::get<2>(y.modules.back()) = name.drop_front().drop_back().str();
    } else if (key == "Content" && current == "Memory64List") {
      y.memory64 = yamlHex(value);
    } else if (key == "Content" && current == "MiscInfo") {
      y.misc_info = yamlHex(value);
    }
  }
  return y;
}

const Region *regionHolding(const AddressSpace &memory, uint64_t addr) {
  const Region *r = memory.regionContaining(addr);
  REQUIRE(r != nullptr);
  return r;
}

} // namespace

TEST_CASE("wine minidump: the facts agree with obj2yaml-14 and with the program", "[live]") {
  WineDump wine;
  if (!wine.open())
    return;
  const Snapshot &snap = *wine.snapshot;
  const std::vector<nlohmann::json> &manifest = wine.manifest;
  Yaml y = readObj2yaml(wine.path);

  // What a MiniDumpWithFullMemory dump from Wine holds: a Memory64List and no MemoryInfoList.
  INFO("streams: " << llvm::join(y.streams, ", "));
  CHECK(std::count(y.streams.begin(), y.streams.end(), "Memory64List") == 1);
  CHECK(std::count(y.streams.begin(), y.streams.end(), "MemoryInfoList") == 0);
  CHECK(y.flags == "0x2"); // MINIDUMP_TYPE MiniDumpWithFullMemory
  CHECK(y.arch == "AMD64");
  CHECK(snap.system.arch == "x86_64");
  CHECK(y.platform == "Win32NT");
  CHECK(snap.system.os == Os::Windows);
  CHECK(snap.diagnostics.empty());

  // Memory64List: u64 count, u64 base RVA, then (start, size) pairs; the reader's ranges are the
  // same ones, and the data runs to the end of the file.
  REQUIRE(y.memory64.size() >= 16);
  const uint64_t count = llvm::support::endian::read64le(y.memory64.data());
  const uint64_t base_rva = llvm::support::endian::read64le(y.memory64.data() + 8);
  REQUIRE(y.memory64.size() == 16 + 16 * count);
  std::vector<std::pair<uint64_t, uint64_t>> listed, read;
  uint64_t listed_bytes = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *d = y.memory64.data() + 16 + 16 * i;
    listed.emplace_back(llvm::support::endian::read64le(d), llvm::support::endian::read64le(d + 8));
    listed_bytes += listed.back().second;
  }
  std::sort(listed.begin(), listed.end());
  for (const MemoryRange &m : snap.memory)
    read.emplace_back(m.start, m.bytes.size());
  CHECK(read == listed);
  CHECK(snap.capturedBytes() == listed_bytes);
  CHECK(base_rva + listed_bytes == snap.file->getBufferSize());

  // Threads: ids and TEBs as written; the process id from MiscInfo, as the program printed it.
  REQUIRE(snap.threads.size() == y.threads.size());
  for (size_t i = 0; i < y.threads.size(); ++i) {
    CHECK(snap.threads[i].tid == y.threads[i].first);
    CHECK(snap.threads[i].teb == y.threads[i].second);
  }
  REQUIRE(y.misc_info.size() >= 12);
  CHECK(snap.process.pid == llvm::support::endian::read32le(y.misc_info.data() + 8));
  CHECK(snap.process.pid == manifest[0]["pid"].get<uint64_t>());
  CHECK(snap.process.name == "story_windows.exe");

  // Modules: the same bases, sizes and names; the executable first.
  REQUIRE(snap.modules.size() == y.modules.size());
  for (size_t i = 0; i < y.modules.size(); ++i) {
    CHECK(snap.modules[i].start == std::get<0>(y.modules[i]));
    CHECK(snap.modules[i].end == std::get<0>(y.modules[i]) + std::get<1>(y.modules[i]));
    CHECK(snap.modules[i].path == std::get<2>(y.modules[i]));
  }
  CHECK(llvm::StringRef(snap.modules[0].path).endswith("story_windows.exe"));

  // The program's two threads, by their TEBs: the main thread wrote the dump and has no stack
  // descriptor (its stack comes from its TEB); the worker was suspended and has one. Both stacks
  // are classed stack, and the regions inside them too.
  AddressSpace memory(snap);
  size_t threads_seen = 0;
  for (const nlohmann::json &m : manifest) {
    if (!m.contains("thread"))
      continue;
    ++threads_seen;
    INFO(m.dump());
    const uint64_t teb = addressOf(m, "teb");
    auto t = std::find_if(snap.threads.begin(), snap.threads.end(),
                          [&](const Thread &t) { return t.teb == teb; });
    REQUIRE(t != snap.threads.end());
    CHECK(t->tid == m["tid"].get<uint64_t>());
    const uint64_t limit = addressOf(m, "stack_limit"), base = addressOf(m, "stack_base");
    if (m["thread"] == "main") {
      CHECK(t->stack_source == RegionSource::Teb);
      CHECK(t->stack_start == limit);
      CHECK(t->stack_end == base);
    } else {
      CHECK(t->stack_source == RegionSource::ThreadList);
      CHECK(t->stack_start >= limit); // the descriptor holds the used part: from its Rsp up
      CHECK(t->stack_end == base);
      CHECK(t->stack_pointer >= t->stack_start);
    }
    const Region *stack = regionHolding(memory, base - 8);
    CHECK(stack->cls == RegionClass::Stack);
    CHECK(stack->class_source == t->stack_source);
    for (const Region &r : snap.regions)
      if (r.start >= t->stack_start && r.end() <= t->stack_end)
        CHECK(r.cls == RegionClass::Stack);
  }
  CHECK(threads_seen == 2);

  // Every planted buffer lies in captured private memory: class anonymous, classed by elimination.
  for (const nlohmann::json &m : manifest) {
    if (!m.contains("address"))
      continue;
    INFO(m.dump());
    const uint64_t address = addressOf(m, "address");
    const Region *r = regionHolding(memory, address);
    CHECK(r->cls == RegionClass::Anonymous);
    CHECK(r->class_source == RegionSource::Captured);
    CHECK(r->perms.str() == "r??");
    CHECK(memory.capturedRunFrom(address) >= m["requested"].get<uint64_t>());
  }
}

TEST_CASE("wine minidump: analyze finds the planted buffers with their kinds", "[live]") {
  WineDump wine;
  if (!wine.open())
    return;
  const std::vector<nlohmann::json> &manifest = wine.manifest;
  AddressSpace memory(*wine.snapshot);
  Analysis analysis = analyze(memory, AnalyzeOptions{});

  // No walker recognises a Wine process's heap; the report says what covered it.
  CHECK(analysis.heaps.empty());
  const std::vector<Diagnostic> warnings = analysis.diagnostics.warnings();
  CHECK(std::any_of(warnings.begin(), warnings.end(), [](const Diagnostic &d) {
    return d.where == "windows native heaps" &&
           d.message.find("no NT heap was walked") != std::string::npos &&
           d.message.find("region scan of captured private memory") != std::string::npos;
  }));

  // Slack of an estimated run of zeros or random bytes in Wine's heap: it takes in the 8-byte
  // block header and the alignment padding beside the block (8 bytes measured), and for the first
  // block of a subheap the end of the subheap's header (48 bytes measured).
  constexpr uint64_t kRunSlack = 64;
  std::map<std::string, int> found;
  std::vector<bool> holds_planted(analysis.buffers.size());
  for (const nlohmann::json &m : manifest) {
    if (!m.contains("address"))
      continue;
    INFO(m.dump());
    const uint64_t address = addressOf(m, "address");
    const uint64_t requested = m["requested"].get<uint64_t>();
    const std::string name = m["name"], where = m["memory"];
    // The buffer that holds the planted bytes' start.
    auto it = std::find_if(analysis.buffers.begin(), analysis.buffers.end(), [&](const Buffer &b) {
      return b.allocation.address <= address && address < b.allocation.address + b.allocation.size;
    });
    const bool at_address = it != analysis.buffers.end() && it->allocation.address == address;
    REQUIRE(it != analysis.buffers.end());
    const Buffer &b = *it;
    holds_planted[static_cast<size_t>(it - analysis.buffers.begin())] = true;
    ++found[where + " " + name];
    CHECK(bufferSource(analysis, b) == "region-scan");
    CHECK(kindName(b.content.kind) == m["kind"].get<std::string>());
    if (m.contains("payload_kind")) {
      const DetailValue *payload = b.content.details.get("payload_kind");
      REQUIRE(payload != nullptr);
      CHECK(std::get<std::string>(*payload) == m["payload_kind"].get<std::string>());
    }
    const bool has_signature = name == "jpeg-slice" || name == "aws-chunk" || name == "png" ||
                               name == "amqp-publish" || name == "json";
    if (name == "amqp-then-zeros") {
      // A large block of its own holding one publish and zeros: the buffer runs from the frame
      // to the block's last committed page (Wine rounds a large block to 64 KiB).
      CHECK(at_address);
      CHECK(b.estimated);
      CHECK(b.allocation.size >= requested);
      CHECK(b.allocation.size - requested < 0x10000);
    } else if (has_signature) {
      CHECK(at_address);
      if (name == "png" || name == "amqp-publish" || name == "json" || where == "virtual") {
        // The PNG's, the AMQP frames' and the JSON text's extents are their own (the JSON lead
        // checks the text to its closing bracket); a VirtualAlloc'd block is followed by zeros.
        CHECK(b.allocation.size == requested);
        if (name == "json")
          CHECK_FALSE(b.estimated);
      } else {
        // Packed heap blocks: the estimate runs to the next block's content, over its header.
        CHECK(b.estimated);
        CHECK(b.allocation.size >= requested);
        CHECK(b.allocation.size - requested < 64);
      }
    } else if (name == "aws-final-chunk") {
      // A final chunk written over a stale frame: the format's extent is 86 bytes, under the
      // minimum; the buffer is the frame and the stale bytes behind it, to the next block's
      // content (in the heap, over its header) or to the zeros after it (VirtualAlloc'd).
      CHECK(b.allocation.address == address);
      CHECK(b.estimated);
      CHECK(b.allocation.size >= requested);
      CHECK(b.allocation.size - requested < 64);
      const DetailValue *stale = b.content.details.get("stale_bytes");
      REQUIRE(stale != nullptr);
      CHECK(std::get<uint64_t>(*stale) == b.allocation.size - b.content.length);
    } else if (where == "virtual") {
      // The whole allocation: the committed pages VirtualQuery gave the program.
      CHECK(b.allocation.address == address);
      CHECK(b.allocation.size == m["size"].get<uint64_t>());
      CHECK(b.allocation.whole_pages);
    } else {
      // Zeros and random bytes in Wine's heap: a run holding the planted bytes, give or take the
      // block's header and padding.
      CHECK(b.estimated);
      CHECK(address - b.allocation.address <= kRunSlack);
      CHECK(b.allocation.address + b.allocation.size >= address + requested);
      CHECK(b.allocation.address + b.allocation.size - (address + requested) <= kRunSlack);
    }
  }
  for (const char *where : {"heap", "virtual"}) {
    INFO(where);
    CHECK(found[std::string(where) + " jpeg-slice"] == 8);
    CHECK(found[std::string(where) + " aws-chunk"] == 8);
    CHECK(found[std::string(where) + " png"] == 1);
    CHECK(found[std::string(where) + " zeros"] == 3);
    CHECK(found[std::string(where) + " random"] == 2);
  }
  for (const char *where : {"heap", "virtual"})
    CHECK(found[std::string(where) + " amqp-publish"] == 3);
  CHECK(found["virtual aws-final-chunk"] == 2);
  CHECK(found["virtual json"] == 1);
  CHECK(found["heap json"] == 1);
  CHECK(found["heap aws-final-chunk"] == 2);
  CHECK(found["heap amqp-then-zeros"] == 2);
  CHECK(found["heap utf16-text"] == 1);

  // No noise from the runs: every other buffer is a whole private allocation of Wine's own
  // (code page tables, reservations), reported with its size and sniffed kind, or the JSON text
  // a freed block still holds (the program frees the JSON bodies it published; the heap's free
  // list links overwrote its first bytes, so it is text without JSON's lead).
  for (size_t i = 0; i < analysis.buffers.size(); ++i) {
    const Buffer &b = analysis.buffers[i];
    INFO(hexAddress(b.allocation.address)
         << " " << b.allocation.size << " " << kindName(b.content.kind).str());
    if (holds_planted[i] || b.allocation.whole_pages)
      continue;
    REQUIRE(b.content.kind == ContentKind::Text);
    std::vector<uint8_t> text(std::min<uint64_t>(b.allocation.size, 4096));
    REQUIRE_FALSE(static_cast<bool>(memory.read(b.allocation.address, text)));
    CHECK(std::string(text.begin(), text.end()).find("\"bucket\": \"photos-") != std::string::npos);
  }
}
