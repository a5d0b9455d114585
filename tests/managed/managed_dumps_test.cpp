// The coreclr and mono walkers on real dumps: fixtures/dotnet/LohArrays.cs holds known arrays on
// .NET Core 2.0 and on Mono 6.8, prints each array's data address, length and FNV-1a hash, and is
// dumped with gcore by fixtures/dotnet/make_cores.sh. Every planted array must be found at its
// exact address, with its exact object size, length, element size, heap and content, and the
// byte[] arrays must fall into the story's two size groups.
//
// The dumps need fixtures/dotnet/setup.sh to have run (README's test command does). Without it the
// tests are skipped with a visible warning, except under CI (CI set), where they fail.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "support/heap_walk.h"
#include "support/minidump_writer.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// Runs make_cores.sh for `runtime` and returns the core's path, or "" when the dumps cannot be
/// made on this machine (then the caller returns; under CI that is a failure instead).
std::string preparedCore(const std::string &runtime) {
  std::string out = binaryDir() + "/dotnet-fixtures";
  std::string why;
  if (!canRunGcore()) {
    why = "gcore is missing or ptrace is not allowed";
  } else {
    CommandResult r = runCommand("bash '" + sourceDir() + "/fixtures/dotnet/make_cores.sh' '" +
                                 out + "' " + runtime);
    if (r.exit_code != 0)
      why = "make_cores.sh failed (" + std::to_string(r.exit_code) + "): " + r.err + r.out;
  }
  if (!availableOrSkipped(why.empty(), "no " + runtime +
                                           " dump (run fixtures/dotnet/setup.sh "
                                           "first): " +
                                           why))
    return "";
  return out + "/" + runtime + ".core";
}

std::vector<nlohmann::json> readManifest(const std::string &path) {
  std::vector<nlohmann::json> lines = readJsonLines(path);
  REQUIRE(lines.size() > 1);
  return lines;
}

/// Runs `analyze CORE ARGS --report report.json -q` in `dir` (a scratch directory) and returns the
/// report.
nlohmann::json analyzeReport(const std::string &dir, const std::string &core,
                             const std::string &args) {
  CommandResult r = runTool(dir, "analyze '" + core + "' " + args + " --report report.json -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(readText(dir + "/report.json"));
}

/// The buffers of `report` by address.
std::map<uint64_t, const nlohmann::json *> buffersByAddress(const nlohmann::json &report) {
  std::map<uint64_t, const nlohmann::json *> buffers;
  for (const nlohmann::json &b : report["buffers"])
    buffers[std::stoull(b["address"].get<std::string>(), nullptr, 16)] = &b;
  return buffers;
}

/// FNV-1a (64-bit) over `len` bytes at `addr`, read through the address space.
uint64_t fnv1a(const AddressSpace &memory, uint64_t addr, uint64_t len) {
  std::vector<uint8_t> bytes(len);
  llvm::Error err = memory.read(addr, bytes);
  std::string why = err ? llvm::toString(std::move(err)) : "";
  INFO("reading the array's elements: " << why);
  REQUIRE(why.empty());
  uint64_t h = 14695981039346656037ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

struct Expectations {
  const char *walker;
  uint32_t data_offset;   // elements start this far into the object
  uint64_t header_size;   // object size = header_size + length * element size
  uint64_t large_from;    // objects of at least this size live in the large-object heap/space
  uint64_t smallest_seen; // arrays below this size are not expected (not walked)
  const char *large_kind; // heap_kind of large ones
  const char *small_kind; // heap_kind of small ones ("" when not walked)
};

struct Outcome {
  std::map<uint64_t, int> groups; // byte[] size groups of 85,000 bytes and up
  std::map<std::string, std::string> facts;
};

/// The checks shared by both runtimes.
Outcome checkRuntime(const std::string &core, const Expectations &x) {
  std::vector<nlohmann::json> manifest =
      readManifest(core.substr(0, core.size() - 5) + ".manifest.jsonl");
  CHECK(manifest[0]["runtime"] == x.walker);
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  const HeapWalker &walker = walkerNamed(x.walker);
  CHECK(walker.detect(memory));
  std::vector<Allocation> found;
  Diagnostics diags;
  auto start = std::chrono::steady_clock::now();
  auto result = walker.walk(
      memory, [&](const Allocation &a) { found.push_back(a); }, diags);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result)
    FAIL(llvm::toString(result.takeError()));
  INFO("walk took " << seconds << " s");
  CHECK(seconds < kHangGuardSeconds);
  std::map<uint64_t, const Allocation *> by_data; // data address -> allocation
  for (const Allocation &a : found)
    if (a.managed)
      by_data[a.address + a.data_offset] = &a;

  int planted_large = 0, found_large = 0;
  for (size_t i = 1; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    INFO(m.dump());
    uint64_t length = m["length"], element_size = m["element_size"];
    uint64_t size = x.header_size + length * element_size;
    bool large = size >= x.large_from;
    planted_large += size >= 85000;
    const Allocation *a = nullptr;
    if (m.contains("data_address")) {
      auto it = by_data.find(std::stoull(m["data_address"].get<std::string>(), nullptr, 16));
      a = it == by_data.end() ? nullptr : it->second;
    } else { // arrays of references cannot be pinned: match by length and element size
      for (const Allocation &c : found)
        if (c.managed && c.managed->length == length && c.managed->element_size == element_size &&
            c.state == AllocState::Used)
          a = &c;
    }
    if (size < x.smallest_seen) {
      CHECK(a == nullptr);
      continue;
    }
    REQUIRE(a != nullptr);
    found_large += size >= 85000;
    CHECK(a->state == AllocState::Used);
    CHECK(a->data_offset == x.data_offset);
    CHECK(a->size == size);
    REQUIRE(a->managed);
    CHECK(a->managed->length == length);
    CHECK(a->managed->element_size == element_size);
    CHECK(a->managed->large_object_heap == large);
    CHECK(a->managed->heap_kind == (large ? x.large_kind : x.small_kind));
    CHECK(a->managed->method_table != 0);
    // sbyte[] (the fixture holds more of them than the heap has byte[]) is no byte[].
    CHECK((a->managed->type_name == "byte[]") == (m["type"] == "byte[]"));
    if (m.contains("fnv1a64"))
      CHECK(fnv1a(memory, a->address + a->data_offset, length * element_size) ==
            std::stoull(m["fnv1a64"].get<std::string>(), nullptr, 16));
  }
  CHECK(found_large == planted_large);
  CHECK(planted_large == 13);

  Outcome out;
  for (const Allocation &a : found)
    if (a.managed && a.managed->type_name == "byte[]" && a.state == AllocState::Used &&
        a.size >= 85000)
      ++out.groups[a.size];
  for (const auto &[key, value] : result->facts)
    out.facts[key] = value;
  return out;
}

} // namespace

TEST_CASE("coreclr walker finds every planted array in a .NET Core 2.0 dump", "[live]") {
  std::string core = preparedCore("coreclr");
  if (core.empty())
    return;
  // CoreCLR: 24-byte array base size, elements at +16, LOH from 85,000 bytes; SOH is walked too.
  Outcome out = checkRuntime(core, {"coreclr", 16, 24, 85000, 0, "loh", "soh"});
  // The story: byte[131072] and byte[131162] are objects of 131,096 and 131,186 bytes.
  CHECK(out.groups == std::map<uint64_t, int>{{131096, 5}, {131186, 4}});
  CHECK(out.facts["coreclr_discovery"] == "heap_segment records");
  CHECK(out.facts["coreclr_contract_descriptor"] == "absent"); // .NET Core 2.0 has none
  // byte[] is told from sbyte[] (and bool[], which the runtime holds) by its element type's name.
  CHECK(out.facts["coreclr_byte_array_named"] == "from metadata (System.Byte)");
  CHECK(std::stoi(out.facts["coreclr_byte_like_element_types"]) >= 2);
}

TEST_CASE("mono walker finds every planted large array in a Mono 6.8 dump", "[live]") {
  std::string core = preparedCore("mono");
  if (core.empty())
    return;
  // Mono: 32-byte array header; objects over 8,000 bytes are in the large object space, which is
  // all this walker reads (byte[1000], byte[16] and int[100] are in the nursery/major heap).
  Outcome out = checkRuntime(core, {"mono", 32, 32, 8001, 8001, "los", ""});
  CHECK(out.groups == std::map<uint64_t, int>{{131104, 5}, {131194, 4}});
  // sgen_los_object_list found in mono-sgen's data without symbols.
  CHECK(llvm::StringRef(out.facts["mono_los_list_head"]).startswith("0x"));
}

TEST_CASE("coreclr holders: native memory holds an array only through a GC handle, each pinned "
          "array through its own handle's slot",
          "[live]") {
  std::string core = preparedCore("coreclr");
  if (core.empty())
    return;
  std::vector<nlohmann::json> manifest =
      readManifest(core.substr(0, core.size() - 5) + ".manifest.jsonl");
  const nlohmann::json report = analyzeReport(scratchDir("coreclr_holders"), core, "--min-size 16");
  const std::map<uint64_t, const nlohmann::json *> buffers = buffersByAddress(report);
  std::map<std::string, std::string> facts;
  for (const nlohmann::json &heap : report["heaps"])
    if (heap["walker"] == "coreclr")
      facts = heap["facts"].get<std::map<std::string, std::string>>();
  CHECK(facts["coreclr_handle_segments"] == "1");
  INFO(facts["coreclr_handles"]);

  // The program pinned each array it hashed with GCHandle.Alloc and printed the handle: the
  // address of its slot (bit 0 set for a pinned handle). That slot, in the handle table, holds
  // the array and is a root; no word of the runtime's own records is.
  int pinned = 0;
  for (size_t i = 1; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    if (!m.contains("handle"))
      continue;
    INFO(m.dump());
    ++pinned;
    const uint64_t object = std::stoull(m["data_address"].get<std::string>(), nullptr, 16) - 16;
    const std::string slot =
        hexAddress(std::stoull(m["handle"].get<std::string>(), nullptr, 16) & ~uint64_t(7));
    auto it = buffers.find(object);
    REQUIRE(it != buffers.end());
    const nlohmann::json &b = *it->second;
    INFO(b.dump());
    CHECK(b["verdict"] == "anchored"); // the path may start at a stack that still holds it
    bool held_by_slot = false;
    for (const nlohmann::json &h : b["holders"])
      held_by_slot |= h["kind"] == "other" && h["address"] == slot;
    CHECK(held_by_slot);
  }
  CHECK(pinned == 17);
  // The runtime holds objects of its own through strong handles too (its statics arrays, the
  // thread objects): at least the program's.
  CHECK(std::stoull(facts["coreclr_handles"]) >= uint64_t(pinned));
  for (const auto &[address, b] : buffers) {
    if ((*b)["allocator"] != "coreclr")
      continue;
    INFO(b->dump());
    for (const char *list : {"holders", "path"})
      for (const nlohmann::json &h : b->value(list, nlohmann::json::array()))
        CHECK(h["kind"] != "global");
  }
}

namespace {

/// The lines fixtures/dotnet/Holders.cs printed to make the prepared core `core`: its runtime line
/// and one per buffer (8 input and output, 8 rented, 3 frames, a download, a local, 2 dropped).
std::vector<nlohmann::json> holdersManifest(const std::string &core) {
  std::vector<nlohmann::json> manifest =
      readManifest(core.substr(0, core.size() - 5) + ".manifest.jsonl");
  REQUIRE(manifest.size() == 1 + 8 + 8 + 3 + 1 + 1 + 2);
  return manifest;
}

/// The static of Holders.cs each role's buffer is reached from.
const std::map<std::string, std::string> kHoldersStatics = {{"input", "streams"},
                                                            {"output", "streams"},
                                                            {"rented", "channel"},
                                                            {"frame", "frames"},
                                                            {"download", "download"}};

/// The holder of buffer `b` (the object at `object`) that is an object of the `allocator` heap,
/// checked to hold the word that points at the object; nullptr (and a failed check) when none is.
const nlohmann::json *managedHolder(const nlohmann::json &b, const std::string &allocator,
                                    uint64_t object) {
  const nlohmann::json *holder = nullptr;
  for (const nlohmann::json &h : b["holders"])
    if (h["kind"] == "heap" && h.value("allocator", "") == allocator)
      holder = &h;
  CHECK(holder != nullptr);
  if (!holder)
    return nullptr;
  const uint64_t slot = std::stoull((*holder)["address"].get<std::string>(), nullptr, 16);
  REQUIRE(holder->contains("allocation"));
  const uint64_t start = std::stoull((*holder)["allocation"].get<std::string>(), nullptr, 16);
  CHECK(start < slot);
  CHECK(slot < start + (*holder)["allocation_size"].get<uint64_t>());
  CHECK((*holder)["points_to"] == hexAddress(object));
  return holder;
}

/// Checks that the report holds Holders.cs's two dropped arrays (120,000 bytes) of `allocator`'s
/// heap, nothing holding them.
void checkDroppedHolders(const std::map<uint64_t, const nlohmann::json *> &buffers,
                         const std::string &allocator) {
  int dropped = 0;
  for (const auto &[address, b] : buffers)
    if ((*b)["allocator"] == allocator && (*b)["managed"]["length"] == 120000) {
      INFO(b->dump());
      ++dropped;
      CHECK((*b)["holders"].empty());
      CHECK((*b)["verdict"] == "unreferenced");
    }
  CHECK(dropped == 2);
}

/// Checks that `report` says in one finding that Holders.cs's four upload streams hold its eight
/// input and output buffers (`input_size` and `output_size` bytes each).
void checkStreamFinding(const nlohmann::json &report, uint64_t input_size, uint64_t output_size) {
  const nlohmann::json *found = nullptr;
  for (const nlohmann::json &f : report["findings"])
    if (f["type"] == "held-by-type" &&
        llvm::StringRef(f["explanation"].get<std::string>())
            .startswith("4 `Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream` objects "))
      found = &f;
  REQUIRE(found != nullptr);
  INFO(found->dump());
  CHECK((*found)["addresses"].size() == 8);
  CHECK((*found)["bytes"] == 4 * (input_size + output_size));
  CHECK_THAT((*found)["explanation"].get<std::string>(),
             Catch::EndsWith("`_inputBuffer` 4 x " + groupedDigits(input_size) +
                             " bytes, `_outputBuffer` 4 x " + groupedDigits(output_size) +
                             " bytes"));
}

} // namespace

TEST_CASE("coreclr holders: each buffer's holder is named by its type and field, from the "
          "module's metadata in the dump",
          "[live]") {
  // fixtures/dotnet/Holders.cs holds byte[] buffers in the fields of its own types and in arrays,
  // and prints, for each, the type and the field (or element) that holds it as the runtime names
  // them. The report must name the same, with the object that holds the word.
  std::string core = preparedCore("coreclr-holders");
  if (core.empty())
    return;
  const std::vector<nlohmann::json> manifest = holdersManifest(core);
  const std::string dir = scratchDir("coreclr_holder_names");
  const nlohmann::json report = analyzeReport(dir, core, "");
  const std::map<uint64_t, const nlohmann::json *> buffers = buffersByAddress(report);

  std::map<std::string, int> named; // role -> buffers whose holder was named as the program says
  // role -> buffers with a path from the statics' GC handle, and those whose path passes the
  // objects the program put between
  std::map<std::string, int> from_handle, through;
  for (size_t i = 1; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    INFO(m.dump());
    if (m["role"] == "dropped")
      continue; // below: the program does not know where they are
    const uint64_t object = std::stoull(m["data_address"].get<std::string>(), nullptr, 16) - 16;
    auto it = buffers.find(object);
    REQUIRE(it != buffers.end());
    const nlohmann::json &b = *it->second;
    INFO(b.dump());
    CHECK(b["managed"]["type"] == "byte[]");
    CHECK(b.value("noscan", false)); // its elements are no references: the pass leaves it unread
    if (m["role"] == "local") {
      // A local of the sleeping thread: a stack (or a register) holds it.
      bool on_stack = false;
      for (const nlohmann::json &h : b["holders"])
        on_stack |= h["kind"] == "stack" || h["kind"] == "register";
      CHECK(on_stack);
      CHECK(b["verdict"] == "anchored");
      continue;
    }
    // The object that holds the word: it starts at or before it and ends after it.
    const nlohmann::json *holder = managedHolder(b, "coreclr", object);
    REQUIRE(holder != nullptr);
    if (holder->value("class", "") == m["holder_type"] &&
        holder->value("field", "") == m["holder_field"])
      ++named[m["role"]];
    // Reached from a static: a path from a root, each step holding the one before it. The
    // shortest may start at a stack (a frame of Main may still hold the buffer or an object on
    // the way, as the JIT left it); else it runs from the GC handle that keeps the statics,
    // through the statics array and the objects between, to the buffer.
    CHECK(b["verdict"] == "anchored");
    const nlohmann::json &path = b["path"];
    REQUIRE_FALSE(path.empty());
    CHECK(b["path_steps"] == path.size());
    const nlohmann::json &root = path.back();
    CHECK(root["kind"] != "heap");
    for (size_t s = 0; s + 1 < path.size(); ++s) {
      CHECK(path[s]["kind"] == "heap");
      CHECK(path[s]["allocator"] == "coreclr");
      CHECK(path[s]["points_to"] ==
            (s ? path[s - 1].value("allocation", "") : b["address"].get<std::string>()));
    }
    if (path.size() > 1)
      CHECK(path[0] == *holder);
    if (root["kind"] == "stack" || root["kind"] == "register")
      continue;
    CHECK(path.size() >= 2);
    // The step the handle holds is the module's statics array, named as the static the slot is
    // (by the FieldDesc at its distance from the module's first static slot).
    const nlohmann::json &static_step = path[path.size() - 2];
    CHECK(static_step.value("class", "") == "Holders");
    CHECK(static_step.value("field", "") == kHoldersStatics.at(m["role"]));
    CHECK(static_step.value("static", false));
    CHECK(root.value("handle", "") == "gc-handle");
    CHECK(root.value("allocator", "") == "coreclr");
    const std::string role = m["role"];
    for (const nlohmann::json &step : path)
      if ((role == "input" || role == "output") &&
          step.value("class", "") == "Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream[]")
        ++through[role];
      else if (role == "rented" && step.value("class", "") == "RabbitMQ.Client.Impl.Channel" &&
               step.value("field", "") == "_rented")
        ++through[role];
    ++from_handle[role];
  }
  // A path from the statics' handle passes the objects the program put between.
  CHECK(through["input"] == from_handle["input"]);
  CHECK(through["output"] == from_handle["output"]);
  CHECK(through["rented"] == from_handle["rented"]);
  // (Which root a shortest path starts at depends on what the JIT left in Main's frame: in some
  // cores every path starts at a stack. The statics are checked below, on the arrays they hold.)
  CHECK(named["input"] == 4);
  CHECK(named["output"] == 4);
  CHECK(named["rented"] == 8);
  CHECK(named["frame"] == 3);
  CHECK(named["download"] == 1);
  checkStreamFinding(report, 131096, 131186);
  // Dropped after the last collection: no word of the dump points into them.
  checkDroppedHolders(buffers, "coreclr");

  // One step up: the Channel's List<byte[]> holds the byte[][] (its _items) that holds the rented
  // buffers; a generic instantiation is named with its type arguments.
  std::string items; // the byte[][] holding the first rented buffer
  for (size_t i = 1; i < manifest.size() && items.empty(); ++i) {
    if (manifest[i]["role"] != "rented")
      continue;
    const uint64_t object =
        std::stoull(manifest[i]["data_address"].get<std::string>(), nullptr, 16) - 16;
    const nlohmann::json &rented = *buffers.at(object);
    for (const nlohmann::json &h : rented["holders"])
      if (h["kind"] == "heap")
        items = h["allocation"];
  }
  REQUIRE_FALSE(items.empty());
  const nlohmann::json small = analyzeReport(dir, core, "--min-size 16");
  bool list_named = false;
  for (const nlohmann::json &b : small["buffers"])
    if (b["address"] == items)
      for (const nlohmann::json &h : b["holders"])
        list_named |= h.value("class", "") == "System.Collections.Generic.List`1<System.Byte[]>" &&
                      h.value("field", "") == "_items";
  CHECK(list_named);
  // Whatever root the shortest paths start at, the arrays the program's statics hold are held by
  // those statics, named as the statics they are: `Holders.streams` holds the streams' array,
  // `Holders.frames` the frames' byte[][].
  std::map<std::string, std::vector<uint64_t>> held_by_static; // field -> lengths of what it holds
  for (const nlohmann::json &b : small["buffers"])
    for (const nlohmann::json &h : b["holders"])
      if (h.value("static", false) && h.value("class", "") == "Holders")
        held_by_static[h.value("field", "")].push_back(b["managed"].value("length", 0));
  INFO(nlohmann::json(held_by_static).dump());
  CHECK(held_by_static["streams"] == std::vector<uint64_t>{4});
  CHECK(held_by_static["frames"] == std::vector<uint64_t>{3});

  // The story's size groups say who holds their members (how many of them were held first by
  // something else, a stack the JIT's code left a reference on, varies).
  std::map<uint64_t, std::string> summaries; // group size -> its holders summary
  for (const nlohmann::json &g : report["groups"])
    if (g.contains("holders"))
      summaries[g["size"].get<uint64_t>()] = g["holders"]["summary"];
  CHECK_THAT(
      summaries[131096],
      Catch::Contains(" of 4 held in `Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream."
                      "_inputBuffer`"));
  CHECK_THAT(
      summaries[131186],
      Catch::Contains(" of 4 held in `Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream."
                      "_outputBuffer`"));
  CHECK_THAT(summaries[140024], Catch::Contains(" of 8 held in elements of `System.Byte[][]`"));
  // The first object outside System.* on their paths owns them (through the List's array); the
  // static their paths pass anchors them (an element of the statics array a GC handle keeps), or
  // a frame of Main that still holds an object on the way.
  auto anchored_so = [](const std::string &summary) {
    return summary.find("anchored from static `Holders.") != std::string::npos ||
           summary.find("anchored from the stack of thread") != std::string::npos;
  };
  INFO(summaries[140024] << "\n" << summaries[131096]);
  CHECK_THAT(summaries[140024],
             Catch::Contains("arrays, owned by `RabbitMQ.Client.Impl.Channel._rented`, anchored "
                             "from "));
  CHECK_THAT(summaries[140024], Catch::EndsWith("(8 anchored)"));
  CHECK(anchored_so(summaries[140024]));
  CHECK_THAT(summaries[131096], Catch::EndsWith("(4 anchored)"));
  CHECK(anchored_so(summaries[131096]));
  // The runtime's handle table is found although the program pinned nothing: its own strong
  // handles hold its statics, so no global of libcoreclr is a holder.
  for (const nlohmann::json &heap : report["heaps"])
    if (heap["walker"] == "coreclr")
      CHECK(heap["facts"]["coreclr_handle_segments"] == "1");
  for (const auto &[address, b] : buffers) {
    if ((*b)["allocator"] != "coreclr" || (*b)["state"] == "free")
      continue;
    INFO(b->dump());
    for (const nlohmann::json &h : (*b)["holders"])
      CHECK(h["kind"] != "global");
  }
}

TEST_CASE("mono holders: each buffer's holder is named by its class and field, from the "
          "MonoClass and the assembly file the image maps",
          "[live]") {
  // fixtures/dotnet/Holders.cs on Mono 6.8: the holders are in SGen's major heap, their class
  // names in the mapped assemblies (which a core with the default coredump_filter lacks: read from
  // the files after their module version ids are compared), the statics in each class's static
  // area, a block of the C heap.
  std::string core = preparedCore("mono-holders");
  if (core.empty())
    return;
  const std::vector<nlohmann::json> manifest = holdersManifest(core);
  CHECK(manifest[0]["runtime"] == "mono");
  const std::string dir = scratchDir("mono_holder_names");
  const nlohmann::json report = analyzeReport(dir, core, "");
  const std::map<uint64_t, const nlohmann::json *> buffers = buffersByAddress(report);
  std::map<std::string, int> named, list_named;
  int through_static = 0;
  for (size_t i = 1; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    INFO(m.dump());
    if (m["role"] == "dropped")
      continue;
    const uint64_t object = std::stoull(m["data_address"].get<std::string>(), nullptr, 16) - 32;
    auto it = buffers.find(object);
    REQUIRE(it != buffers.end());
    const nlohmann::json &b = *it->second;
    INFO(b.dump());
    CHECK(b["allocator"] == "mono");
    CHECK(b.value("noscan", false)); // a byte[]: the pass leaves it unread
    CHECK(b["verdict"] == "anchored");
    // No runtime record holds a buffer: every holder is an object, a static, a stack or a
    // register (mono-sgen's own data and SGen's internal memory are its bookkeeping).
    for (const nlohmann::json &h : b["holders"])
      CHECK((h["kind"] == "heap" || h["kind"] == "stack" || h["kind"] == "register"));
    if (m["role"] == "local") {
      REQUIRE_FALSE(b["holders"].empty());
      CHECK(b["holders"][0]["kind"] == "stack");
      continue;
    }
    const nlohmann::json *holder = managedHolder(b, "mono", object);
    REQUIRE(holder != nullptr);
    if (holder->value("class", "") == m["holder_type"] &&
        holder->value("field", "") == m["holder_field"])
      ++named[m["role"]];
    // A path from a root, each step holding the one before; a static on the way is named as the
    // program declares it, in the class's static area (a block of the C heap).
    const nlohmann::json &path = b["path"];
    REQUIRE_FALSE(path.empty());
    CHECK(path.back()["kind"] != "heap");
    for (size_t s = 0; s + 1 < path.size(); ++s) {
      CHECK(path[s]["kind"] == "heap");
      CHECK(path[s]["points_to"] ==
            (s ? path[s - 1].value("allocation", "") : b["address"].get<std::string>()));
      if (path[s].value("static", false)) {
        CHECK(path[s]["allocator"] == "glibc");
        CHECK(path[s]["class"] == "Holders");
        CHECK(path[s]["field"] == kHoldersStatics.at(m["role"]));
        ++through_static;
      } else {
        CHECK(path[s]["allocator"] == "mono");
        CHECK_FALSE(path[s].value("class", "").empty());
      }
      if (path[s].value("class", "") == "System.Collections.Generic.List`1<System.Byte[]>" &&
          path[s].value("field", "") == "_items")
        ++list_named[m["role"]];
    }
  }
  CHECK(named["input"] == 4);
  CHECK(named["output"] == 4);
  CHECK(named["rented"] == 8);
  CHECK(named["frame"] == 3);
  CHECK(named["download"] == 1);
  CHECK(list_named["rented"] == 8);
  CHECK(through_static > 0);
  checkStreamFinding(report, 131104, 131194);
  // Dropped after the last collection: nothing points into them.
  checkDroppedHolders(buffers, "mono");
  // The story's groups say who holds them, in one line each.
  std::map<uint64_t, std::string> summaries;
  for (const nlohmann::json &g : report["groups"])
    if (g.contains("holders"))
      summaries[g["size"].get<uint64_t>()] = g["holders"]["summary"];
  CHECK_THAT(summaries[131104],
             Catch::StartsWith("4 of 4 held in "
                               "`Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream."
                               "_inputBuffer`, anchored from "));
  CHECK_THAT(summaries[131194],
             Catch::StartsWith("4 of 4 held in "
                               "`Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream."
                               "_outputBuffer`, anchored from "));
  CHECK_THAT(summaries[140032], Catch::StartsWith("8 of 8 held in elements of `System.Byte[][]`"));
  CHECK_THAT(summaries[320032],
             Catch::StartsWith("1 of 1 held in `System.IO.MemoryStream._buffer`"));
  for (const nlohmann::json &heap : report["heaps"])
    if (heap["walker"] == "mono")
      CHECK(std::stoull(heap["facts"]["mono_major_blocks"].get<std::string>()) > 0);
}

TEST_CASE("mono holders: a pinned array is held at its GC handle's slot, found from the "
          "handle lists in the runtime's data",
          "[live]") {
  // fixtures/dotnet/LohArrays.cs pins each array it hashes with GCHandle.Alloc and prints the
  // handle: on Mono its slot's index in the type's list, shifted left by 3. The slots of the first
  // bucket are consecutive words of one block of the C heap.
  std::string core = preparedCore("mono");
  if (core.empty())
    return;
  std::vector<nlohmann::json> manifest =
      readManifest(core.substr(0, core.size() - 5) + ".manifest.jsonl");
  const nlohmann::json report = analyzeReport(scratchDir("mono_handles"), core, "");
  const std::map<uint64_t, const nlohmann::json *> buffers = buffersByAddress(report);
  int pinned = 0;
  for (size_t i = 1; i < manifest.size(); ++i) {
    const nlohmann::json &m = manifest[i];
    if (!m.contains("handle"))
      continue;
    const uint64_t object = std::stoull(m["data_address"].get<std::string>(), nullptr, 16) - 32;
    auto it = buffers.find(object);
    if (it == buffers.end())
      continue; // a small array, in the major heap: not a buffer the walker lists
    INFO(m.dump());
    const nlohmann::json &b = *it->second;
    INFO(b.dump());
    const uint64_t index = std::stoull(m["handle"].get<std::string>(), nullptr, 16) >> 3;
    REQUIRE(index < 32);
    ++pinned;
    CHECK(b["verdict"] == "anchored");
    bool held_by_slot = false;
    for (const nlohmann::json &h : b["holders"])
      held_by_slot |=
          h.value("handle", "") == "gc-handle" && h["kind"] == "heap" && h["offset"] == 8 * index;
    CHECK(held_by_slot);
  }
  CHECK(pinned >= 12);
}

TEST_CASE("coreclr holders: the Holders process as a Windows-layout minidump names the same "
          "holders as its core",
          "[live]") {
  // The same process, the same bytes, in the container a Windows dump writer makes (a
  // full-memory minidump: MEMORY64 list, memory info, module list with coreclr.dll, thread
  // contexts): the runtime is found by its Windows name, its regions from MEM_* types, its
  // threads' stacks from their descriptors. Every buffer of the GC heap keeps its holders, path,
  // verdict and its group's summary. (The runtime's own layout is Linux x64's: .NET on Windows
  // does not run here.)
  std::string core = preparedCore("coreclr-holders");
  if (core.empty())
    return;
  const std::string dir = scratchDir("coreclr_holders_minidump");
  const std::string minidump = dir + "/coreclr-holders.dmp";
  {
    auto snapshot = openDump(core);
    if (!snapshot)
      FAIL(llvm::toString(snapshot.takeError()));
    REQUIRE((*snapshot)->system.arch == "x86_64");
    const std::vector<uint8_t> bytes = test::mdmp::windowsMinidumpOf(**snapshot);
    std::ofstream out(minidump, std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    REQUIRE(out.good());
  }
  const nlohmann::json from_core = analyzeReport(dir, core, "");
  const nlohmann::json from_minidump = analyzeReport(dir, minidump, "");
  CHECK(from_minidump["dump"]["format"] == "minidump");
  CHECK(from_minidump["dump"]["os"] == "windows");

  // A holder as both dumps can name it: a module's name and symbols are the file's on Linux only.
  auto comparable = [](nlohmann::json steps) {
    for (nlohmann::json &step : steps)
      for (const char *key : {"module", "symbol", "symbol_offset"})
        step.erase(key);
    return steps;
  };
  const std::map<uint64_t, const nlohmann::json *> core_buffers = buffersByAddress(from_core),
                                                   minidump_buffers =
                                                       buffersByAddress(from_minidump);
  int compared = 0, named = 0;
  for (const auto &[address, b] : core_buffers) {
    if ((*b)["allocator"] != "coreclr")
      continue;
    INFO(b->dump());
    auto it = minidump_buffers.find(address);
    REQUIRE(it != minidump_buffers.end());
    const nlohmann::json &m = *it->second;
    INFO(m.dump());
    ++compared;
    CHECK(m["allocator"] == "coreclr");
    CHECK(m["size"] == (*b)["size"]);
    CHECK(m["managed"] == (*b)["managed"]);
    CHECK(m["verdict"] == (*b)["verdict"]);
    CHECK(comparable(m["holders"]) == comparable((*b)["holders"]));
    CHECK(comparable(m.value("path", nlohmann::json::array())) ==
          comparable(b->value("path", nlohmann::json::array())));
    for (const nlohmann::json &h : m["holders"])
      named += h.contains("field");
  }
  // The Holders program's 23 buffers and whatever else of the GC heap the report lists.
  CHECK(compared >= 23);
  CHECK(named >= 20);
  std::map<uint64_t, std::string> core_summaries, minidump_summaries;
  for (const nlohmann::json &g : from_core["groups"])
    if (g.contains("holders"))
      core_summaries[g["size"].get<uint64_t>()] = g["holders"]["summary"];
  for (const nlohmann::json &g : from_minidump["groups"])
    if (g.contains("holders"))
      minidump_summaries[g["size"].get<uint64_t>()] = g["holders"]["summary"];
  for (uint64_t size : {131096, 131186, 140024, 320024})
    CHECK(minidump_summaries[size] == core_summaries[size]);
  CHECK_THAT(minidump_summaries[131096],
             Catch::Contains("held in `Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream."
                             "_inputBuffer`"));
  if (!std::getenv("DUMPSIFT_KEEP_CORES"))
    std::filesystem::remove(minidump); // 70 MB, remade in a second
}
