// The hotspot walker against ground truth from real JVMs: fixtures/java/StoryArrays.java holds the
// story's arrays and prints each one's type, length and FNV-1a hash (and the JVM's array layout);
// gcore dumps it under G1, Parallel and Serial, with compressed oops and class pointers on and
// off. Every planted array must be found with its exact length, object size and content, and
// jhsdb's histogram of the same core (the JDK's own serviceability agent) must match the walker's
// count and bytes for every primitive array class, and its totals.
//
// The tests need a JDK 17 (openjdk-17-jdk-headless: java, javac, jhsdb; scripts/setup.sh --tests
// installs it) and gcore. Without them they are skipped with a visible warning, except under CI (CI
// set), where they fail. Each configuration takes about 12 s (jhsdb is most of it).
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "java_fixture.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;
namespace fs = std::filesystem;

namespace {

/// One JVM configuration: its flags and what the JVM must then say about itself.
struct Config {
  std::string name;
  std::vector<std::string> flags;
  std::string young_collector; // GarbageCollectorMXBean name
  std::string walker_gc;       // the walker's hotspot_gc fact
  bool compressed_oops, compressed_class_pointers;
  bool compact_headers = false;
};

/// The planted arrays of one run, and the JVM's own description of its arrays.
struct Truth {
  nlohmann::json jvm;
  std::vector<nlohmann::json> arrays;
};

/// A primitive array the walker reported.
struct Found {
  const Allocation *allocation;
  uint64_t hash = 0;
};

uint64_t fnv1a(llvm::ArrayRef<uint8_t> bytes) {
  uint64_t h = 14695981039346656037ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

/// jhsdb's histogram of `core`: class description -> {instances, bytes}, summed over the rows of
/// one name (from JDK 21 on, the filler arrays are a second "int[]" row); "Total" holds the totals.
std::map<std::string, std::pair<uint64_t, uint64_t>> jhsdbHistogram(const std::string &core) {
  const std::string command = "'" + javaHome() + "/bin/jhsdb' jmap --histo --exe '" + javaHome() +
                              "/bin/java' --core '" + core + "' 2>&1";
  CommandResult r = runCommand(command);
  INFO(command << "\n" << r.out);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::pair<uint64_t, uint64_t>> histogram;
  std::istringstream lines(r.out);
  const std::regex row(R"(^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)\s*$)");
  const std::regex total(R"(^Total\s*:\s+(\d+)\s+(\d+)\s*$)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, row)) {
      histogram[m[3]].first += std::stoull(m[1]);
      histogram[m[3]].second += std::stoull(m[2]);
    } else if (std::regex_match(line, m, total))
      histogram["Total"] = {std::stoull(m[1]), std::stoull(m[2])};
  }
  REQUIRE(histogram.count("Total") == 1);
  return histogram;
}

/// One OopStorage as gdb reads it through libjvm's symbols: blocks, slots in use, name.
struct GdbStorage {
  uint64_t blocks = 0, handles = 0;
  std::string name;
};

/// The OopStorages of the JVM in `core`, from OopStorageSet::_storages (its size from `nm -S`)
/// and libjvm's symbol table (Debian's libjvm keeps it). The oracle for the handles the walker
/// finds by their shape; it reads the same fields (a storage's active array at +8, the block
/// pointers from +24, a block's bitmask at +512: oopStorage.hpp).
std::vector<GdbStorage> gdbStorages(const std::string &core) {
  const std::string libjvm = javaHome() + "/lib/server/libjvm.so";
  CommandResult nm = runCommand("nm -S --defined-only '" + libjvm + "'");
  std::smatch m;
  uint64_t count = 0;
  const std::regex symbol(R"(^[0-9a-f]+ ([0-9a-f]+) [bBdD] _ZN13OopStorageSet9_storagesE$)");
  std::istringstream nm_lines(nm.out);
  for (std::string line; std::getline(nm_lines, line);)
    if (std::regex_match(line, m, symbol))
      count = std::stoull(m[1], nullptr, 16) / 8;
  INFO("nm -S " << libjvm);
  REQUIRE(count > 0);
  const std::string script = fs::path(core).parent_path() / "storages.gdb";
  {
    std::ofstream out(script);
    out << "set pagination off\n"
        << "set $i = 0\n"
        << "while $i < " << count << "\n"
        << "  set $s = ((long*)&'OopStorageSet::_storages')[$i]\n"
        << "  if $s != 0\n"
        << "    set $a = *(long*)($s + 8)\n"
        << "    set $n = ((long*)$a)[1]\n"
        << "    set $h = 0\n"
        << "    set $j = 0\n"
        << "    while $j < $n\n"
        << "      set $m = *(unsigned long*)(((long*)$a)[3 + $j] + 512)\n"
        << "      while $m != 0\n"
        << "        set $h = $h + ($m & 1)\n"
        << "        set $m = $m >> 1\n"
        << "      end\n"
        << "      set $j = $j + 1\n"
        << "    end\n"
        << "    printf \"storage %ld %ld %s\\n\", $n, $h, *(char**)$s\n"
        << "  end\n"
        << "  set $i = $i + 1\n"
        << "end\n";
  }
  CommandResult r = runCommand("gdb -nx -q -batch -x '" + script + "' '" + javaHome() +
                               "/bin/java' '" + core + "' 2>&1");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  std::vector<GdbStorage> storages;
  const std::regex row(R"(^storage (\d+) (\d+) (.+)$)");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (std::regex_match(line, m, row))
      storages.push_back({std::stoull(m[1]), std::stoull(m[2]), m[3]});
  REQUIRE(storages.size() == count);
  return storages;
}

std::string fact(const HeapWalkResult &r, const std::string &key) {
  for (const auto &[k, v] : r.facts)
    if (k == key)
      return v;
  return "";
}

const HeapWalker &hotspotWalker() {
  for (const auto &w : heapWalkers())
    if (w->name() == "hotspot")
      return *w;
  FAIL("no hotspot walker in the registry");
  return *heapWalkers().front();
}

constexpr const char *kPrimitiveTypes[] = {"boolean[]", "byte[]",  "char[]", "short[]",
                                           "int[]",     "float[]", "long[]", "double[]"};

/// Runs StoryArrays under `config`, dumps it and checks the walker against what it printed and
/// against jhsdb; for G1 with the default layout it also checks the analysis of the story.
void checkConfig(const Config &config) {
  std::string why;
  const std::string classes = javaClasses("StoryArrays", why);
  if (!availableOrSkipped(!classes.empty(), "cannot run the JVM tests: " + why))
    return;
  const std::string dir = scratchDir("hotspot-" + config.name);
  const std::string core = dir + "/story.core";
  Truth truth;
  {
    // Small cores: one malloc arena per thread would add 64 MiB of reserved space each. The JIT
    // stays the default (C2 included), whose allocation prefetch sets the TLAB reserve.
    std::vector<std::string> args{
        "MALLOC_ARENA_MAX=2", javaHome() + "/bin/java",       "-Xmx64m", "-Xms64m",
        "-XX:-UsePerfData",   "-XX:ReservedCodeCacheSize=32m"};
    if (config.compressed_class_pointers)
      args.push_back("-XX:CompressedClassSpaceSize=16m");
    args.insert(args.end(), config.flags.begin(), config.flags.end());
    args.insert(args.end(), {"-cp", classes, "StoryArrays"});
    LiveProcess jvm("/usr/bin/env", args);
    REQUIRE(jvm.manifest().size() > 40);
    truth.jvm = jvm.manifest().front();
    truth.arrays.assign(jvm.manifest().begin() + 1, jvm.manifest().end());
    jvm.gcore(core);
  }
  INFO("JVM: " << truth.jvm.dump());
  const auto &collectors = truth.jvm["collectors"];
  REQUIRE(std::find(collectors.begin(), collectors.end(), config.young_collector) !=
          collectors.end());
  REQUIRE(truth.jvm["UseCompressedOops"] == config.compressed_oops);
  REQUIRE(truth.jvm["UseCompressedClassPointers"] == config.compressed_class_pointers);
  const uint64_t alignment = truth.jvm["ObjectAlignmentInBytes"];

  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  const HeapWalker &walker = hotspotWalker();
  REQUIRE(walker.detect(memory));
  std::vector<Allocation> found;
  Diagnostics diags;
  auto result = walker.walk(
      memory, [&](const Allocation &a) { found.push_back(a); }, diags);
  if (!result)
    FAIL(llvm::toString(result.takeError()));
  for (const Diagnostic &d : diags.warnings())
    UNSCOPED_INFO("warning " << d.where << ": " << d.message);
  CHECK(diags.empty());
  CHECK(fact(*result, "hotspot_gc") == config.walker_gc);
  CHECK(fact(*result, "hotspot_compressed_oops") == (config.compressed_oops ? "on" : "off"));
  CHECK(fact(*result, "hotspot_compressed_class_pointers") ==
        (config.compressed_class_pointers ? "on" : "off"));
  CHECK(fact(*result, "hotspot_compact_headers") == (config.compact_headers ? "on" : "off"));

  // Every planted array, by type, length and content.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, int> found_by_key;
  std::set<std::string> kinds;
  for (const Allocation &a : found) {
    REQUIRE(a.managed);
    const ManagedArray &m = *a.managed;
    kinds.insert(m.heap_kind);
    std::vector<uint8_t> bytes(m.length * m.element_size);
    llvm::Error err = memory.read(a.address + a.data_offset, bytes);
    const std::string why = err ? llvm::toString(std::move(err)) : "";
    INFO(why);
    REQUIRE(why.empty());
    ++found_by_key[{m.type_name, m.length, fnv1a(bytes)}];
  }
  std::map<std::tuple<std::string, uint64_t, uint64_t>, int> planted_by_key;
  for (const nlohmann::json &p : truth.arrays)
    ++planted_by_key[{p["type"], p["length"],
                      std::stoull(p["fnv1a64"].get<std::string>(), nullptr, 16)}];
  for (const auto &[key, count] : planted_by_key) {
    INFO(std::get<0>(key) << " length " << std::get<1>(key) << " hash " << std::get<2>(key));
    CHECK(found_by_key[key] >= count);
  }
  // Sizes and offsets as the JVM's own Unsafe gives the array layout.
  for (const Allocation &a : found) {
    const ManagedArray &m = *a.managed;
    const nlohmann::json &layout = truth.jvm["arrays"][m.type_name];
    const uint64_t base = layout[0], scale = layout[1];
    INFO(m.type_name << " length " << m.length << " at " << a.address);
    CHECK(a.data_offset == base);
    CHECK(m.element_size == scale);
    CHECK(a.size == (base + m.length * scale + alignment - 1) / alignment * alignment);
    CHECK(a.state == AllocState::Used);
  }
  // The story's two sizes: byte[131072] and byte[131162].
  const uint64_t header = truth.jvm["arrays"]["byte[]"][0];
  for (uint64_t length : {131072u, 131162u}) {
    const uint64_t size = (header + length + 7) / 8 * 8;
    auto n = std::count_if(found.begin(), found.end(), [&](const Allocation &a) {
      return a.managed->type_name == "byte[]" && a.size == size;
    });
    CHECK(n >= 10 - (length == 131072 ? 1 : 0)); // 8 slices + 1 outgrown; 8 + 2 frames
  }
  CHECK(kinds.count("old") == 1);
  CHECK(kinds.count("eden") == 1);
  if (config.walker_gc == "G1")
    CHECK(kinds.count("humongous") == 1);

  // The oracle: jhsdb's histogram of the same core.
  auto histogram = jhsdbHistogram(core);
  for (const char *type : kPrimitiveTypes) {
    uint64_t count = 0, bytes = 0;
    if (std::string(type) == "int[]") { // jhsdb names the filler arrays int[] too
      count = std::stoull(fact(*result, "hotspot_filler_arrays"));
      bytes = std::stoull(fact(*result, "hotspot_filler_array_bytes"));
    }
    for (const Allocation &a : found)
      if (a.managed->type_name == type) {
        ++count;
        bytes += a.size;
      }
    INFO(type);
    CHECK(count == histogram[type].first);
    CHECK(bytes == histogram[type].second);
    UNSCOPED_INFO(config.name << " " << type << ": " << count << " arrays, " << bytes << " bytes");
  }
  CHECK(fact(*result, "hotspot_objects") == std::to_string(histogram["Total"].first));
  CHECK(fact(*result, "hotspot_object_bytes") == std::to_string(histogram["Total"].second));
  WARN(config.name << ": byte[] " << histogram["byte[]"].first << " arrays, "
                   << histogram["byte[]"].second << " bytes; all objects "
                   << histogram["Total"].first << ", " << histogram["Total"].second
                   << " bytes: equal to jhsdb");

  if (config.name == "g1") {
    // The whole pipeline: the story's groups, copies and growth chain, and no other walker or the
    // region scan reporting anything inside the Java heap.
    AnalyzeOptions options;
    Analysis analysis = analyze(memory, options);
    std::map<uint64_t, const SizeGroup *> groups;
    for (const SizeGroup &g : analysis.groups)
      groups[g.size] = &g;
    const uint64_t slice = (header + 131072 + 7) / 8 * 8, frame = (header + 131162 + 7) / 8 * 8;
    REQUIRE(groups.count(slice) == 1);
    REQUIRE(groups.count(frame) == 1);
    CHECK(groups[slice]->allocator == "hotspot");
    CHECK(groups[slice]->kinds.front().first == ContentKind::Jpeg);
    CHECK(groups[frame]->allocator == "hotspot");
    CHECK(groups[frame]->kinds.front().first == ContentKind::AwsChunked);
    std::set<std::string> finding_types;
    for (const Finding &f : analysis.findings)
      finding_types.insert(f.type);
    CHECK(finding_types.count("duplicates") == 1);
    CHECK(finding_types.count("growth-chain") == 1);
    const uint64_t heap_lo = std::stoull(fact(*result, "hotspot_heap"), nullptr, 16);
    const uint64_t heap_hi = std::stoull(
        fact(*result, "hotspot_heap").substr(fact(*result, "hotspot_heap").find('-') + 1), nullptr,
        16);
    for (const Buffer &b : analysis.buffers) {
      const bool inside =
          b.allocation.address < heap_hi && b.allocation.address + b.allocation.size > heap_lo;
      if (inside)
        CHECK(bufferSource(analysis, b) == "hotspot");
    }

    // The handles: the OopStorages the walker finds by their shape are the ones libjvm's
    // symbols name, with as many slots in use (the storages that have a block).
    uint64_t strong = 0, weak = 0, strong_handles = 0;
    for (const GdbStorage &st : gdbStorages(core)) {
      UNSCOPED_INFO("gdb: storage " << st.name << ": " << st.blocks << " blocks, " << st.handles
                                    << " handles");
      if (st.blocks == 0)
        continue;
      const bool is_weak = st.name.find("Weak") != std::string::npos;
      (is_weak ? weak : strong) += 1;
      if (!is_weak)
        strong_handles += st.handles;
    }
    CHECK(strong >= 2);
    CHECK(fact(*result, "hotspot_handle_storages") ==
          std::to_string(strong) + " strong, " + std::to_string(weak) + " weak");
    CHECK(fact(*result, "hotspot_strong_handles") == std::to_string(strong_handles));

    // Who holds the arrays: StoryArrays holds them through Java references (a static list) and
    // its locals, never from native memory. The VM's own records there hold the addresses of
    // some (a G1 region's bottom is its first object; G1 keeps per-region arrays of such
    // addresses), and they are not holders: outside the stacks, only a handle holds a Java
    // object from native memory.
    REQUIRE(analysis.holders.buffers.size() == analysis.buffers.size());
    size_t java_arrays = 0;
    for (size_t i = 0; i < analysis.buffers.size(); ++i) {
      const Buffer &b = analysis.buffers[i];
      if (bufferSource(analysis, b) != "hotspot")
        continue;
      ++java_arrays;
      for (const Holder &h : analysis.holders.buffers[i].holders) {
        INFO(hexAddress(b.allocation.address)
             << " is held at " << hexAddress(h.slot) << ", +" << h.offset() << " of a "
             << h.block_size << "-byte block of " << h.walker.str());
        CHECK((h.kind == HolderKind::Stack || h.kind == HolderKind::Register ||
               (h.kind == HolderKind::Heap && h.walker == "hotspot")));
      }
    }
    CHECK(java_arrays >= 20);
  }
  if (!std::getenv("DUMPSIFT_KEEP_CORES"))
    fs::remove_all(dir);
}

} // namespace

TEST_CASE("hotspot walker on G1 (compressed oops and class pointers) matches jhsdb",
          "[jvm][live]") {
  checkConfig({"g1", {"-XX:+UseG1GC"}, "G1 Young Generation", "G1", true, true});
}

TEST_CASE("hotspot walker on G1 without compressed oops matches jhsdb", "[jvm][live]") {
  checkConfig({"g1-no-oops",
               {"-XX:+UseG1GC", "-XX:-UseCompressedOops"},
               "G1 Young Generation",
               "G1",
               false,
               true});
}

TEST_CASE("hotspot walker on G1 without compressed oops or class pointers matches jhsdb",
          "[jvm][live]") {
  checkConfig({"g1-no-ccp",
               {"-XX:+UseG1GC", "-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers"},
               "G1 Young Generation",
               "G1",
               false,
               false});
}

TEST_CASE("hotspot walker on Parallel matches jhsdb", "[jvm][live]") {
  checkConfig({"parallel", {"-XX:+UseParallelGC"}, "PS Scavenge", "Parallel", true, true});
}

TEST_CASE("hotspot walker on Parallel without compressed oops or class pointers matches "
          "jhsdb",
          "[jvm][live]") {
  checkConfig({"parallel-no-ccp",
               {"-XX:+UseParallelGC", "-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers"},
               "PS Scavenge",
               "Parallel",
               false,
               false});
}

TEST_CASE("hotspot walker on Serial matches jhsdb", "[jvm][live]") {
  checkConfig({"serial", {"-XX:+UseSerialGC"}, "Copy", "Serial", true, true});
}

TEST_CASE("hotspot walker on Serial without compressed oops or class pointers matches jhsdb",
          "[jvm][live]") {
  checkConfig({"serial-no-ccp",
               {"-XX:+UseSerialGC", "-XX:-UseCompressedOops", "-XX:-UseCompressedClassPointers"},
               "Copy",
               "Serial",
               false,
               false});
}

// JDK 24+ only (JEP 450/519): not installed by scripts/setup.sh --tests, so hidden from ctest; run
// by hand with DUMPSIFT_JAVA_HOME set to a newer JDK: dumpsift_hotspot_tests "[.jdk24]".
TEST_CASE("hotspot walker on JDK 24+ G1 with compact object headers matches jhsdb",
          "[.jdk24][live]") {
  checkConfig({"g1-compact",
               {"-XX:+UseG1GC", "-XX:+UseCompactObjectHeaders"},
               "G1 Young Generation",
               "G1",
               true,
               true,
               true});
}

TEST_CASE("hotspot walker on JDK 24+ Parallel with compact object headers matches jhsdb",
          "[.jdk24][live]") {
  checkConfig({"parallel-compact",
               {"-XX:+UseParallelGC", "-XX:+UseCompactObjectHeaders"},
               "PS Scavenge",
               "Parallel",
               true,
               true,
               true});
}

TEST_CASE("hotspot walker on JDK 24+ Serial with compact object headers matches jhsdb",
          "[.jdk24][live]") {
  checkConfig({"serial-compact",
               {"-XX:+UseSerialGC", "-XX:+UseCompactObjectHeaders"},
               "Copy",
               "Serial",
               true,
               true,
               true});
}
