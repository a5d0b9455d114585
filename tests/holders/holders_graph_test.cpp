// The holders pass over hand-laid memory: holders classed by where their word lies, verdicts from
// the search of the graph (a cycle of blocks no root reaches is heap-only), and hostile memory (a
// region of words all pointing into one buffer, a block whose words point at many blocks) kept
// within the budget with a warning.
#include "dumpsift/holders/holders.h"
#include "support/byte_builder.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

constexpr uint64_t kHeap = 0x10000000, kHeapSize = 0x200000;
constexpr uint64_t kData = 0x400000; // the module's writable data
constexpr uint64_t kOther = 0x30000000, kOtherSize = 0x400000;

/// What a pass over `m` found, with the heap listing `blocks` (all used) as glibc's.
struct Run {
  std::unique_ptr<Snapshot> snap;
  std::unique_ptr<AddressSpace> memory;
  Holders holders;
  Diagnostics diags;
};

/// `configure` may say more of the heap's walk (its references' shape).
std::unique_ptr<Run> runPass(FakeMemory &m,
                             const std::vector<std::pair<uint64_t, uint64_t>> &blocks,
                             const std::vector<HolderTarget> &targets, uint64_t budget,
                             unsigned threads,
                             const std::function<void(HeapWalkResult &)> &configure = {}) {
  auto run = std::make_unique<Run>();
  run->snap = m.snapshot();
  run->snap->system.arch = "x86_64";
  run->memory = std::make_unique<AddressSpace>(*run->snap);
  std::vector<HeapWalkResult> heaps(1);
  heaps[0].walker = "glibc";
  heaps[0].areas.push_back({"main-heap", kHeap, kHeapSize, 0});
  if (configure)
    configure(heaps[0]);
  BlockDirectoryBuilder directory(1, budget);
  for (const auto &[address, size] : blocks) {
    Allocation a;
    a.address = a.chunk_address = address;
    a.size = size;
    a.state = AllocState::Used;
    directory.add(0, 0, a);
  }
  HoldersOptions options;
  options.threads = threads;
  options.budget = budget;
  run->holders =
      findHolders(*run->memory, heaps, std::move(directory), targets, options, run->diags);
  return run;
}

} // namespace

TEST_CASE("a global, a cycle no root reaches and nothing at all give their verdicts") {
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kData, 0x1000, FakeRegion{true, "/app", {}, UINT64_MAX, true});
  const uint64_t held = kHeap + 0x10000, lost = kHeap + 0x30000, dropped = kHeap + 0x50000;
  const uint64_t a = kHeap + 0x1000, b = kHeap + 0x2000; // a <-> b, a -> lost
  m.put64(kData + 0x40, held + 0x20);                    // an interior pointer counts
  m.put64(a + 0x18, b);
  m.put64(b + 0x8, a);
  m.put64(a + 0x28, lost);
  // First words that are the keys a DenseMap reserves: no vtable, and no key of the names' cache
  // (one CI run's node core had such a block; a Debug build's DenseMap asserted).
  m.put64(a, ~uint64_t(0));
  m.put64(b, ~uint64_t(0) - 1);
  m.put64(held + 0x100, held); // a block pointing into itself is no reference
  m.put64(kHeap + kHeapSize - 8, 0);
  const std::vector<HolderTarget> targets = {{held, 0x10000, AllocState::Used, 0},
                                             {lost, 0x10000, AllocState::Used, 0},
                                             {dropped, 0x10000, AllocState::Used, 0}};
  auto run =
      runPass(m, {{a, 0x100}, {b, 0x100}, {held, 0x10000}, {lost, 0x10000}, {dropped, 0x10000}},
              targets, kDefaultHolderBudget, 1);
  const Holders &h = run->holders;
  CHECK(h.run.reachability);
  CHECK(h.run.blocks == 5);
  CHECK(h.run.references == 3); // a -> b, b -> a, a -> lost
  REQUIRE(h.buffers.size() == 3);

  CHECK(h.buffers[0].verdict == Verdict::Anchored);
  CHECK(h.buffers[0].anchor == HolderKind::Global);
  REQUIRE(h.buffers[0].holders.size() == 1);
  CHECK(h.buffers[0].holders[0].kind == HolderKind::Global);
  CHECK(h.buffers[0].holders[0].slot == kData + 0x40);
  CHECK(h.buffers[0].holders[0].points_to == held + 0x20);
  CHECK(h.buffers[0].holders[0].module == "app");
  CHECK(h.buffers[0].holders[0].symbol_offset == 0x40);
  CHECK(h.buffers[0].path_steps == 1);

  CHECK(h.buffers[1].verdict == Verdict::HeapOnly);
  REQUIRE(h.buffers[1].holders.size() == 1);
  CHECK(h.buffers[1].holders[0].kind == HolderKind::Heap);
  CHECK(h.buffers[1].holders[0].class_name.empty());
  CHECK(h.buffers[1].holders[0].block == a);
  CHECK(h.buffers[1].holders[0].offset() == 0x28);
  CHECK(h.buffers[1].holders[0].walker == "glibc");
  CHECK(h.buffers[1].path.empty());

  CHECK(h.buffers[2].verdict == Verdict::Unreferenced);
  CHECK(h.buffers[2].references == 0);
  CHECK(run->diags.empty());

  const GroupHolders g = summarizeHolders(h, std::vector<size_t>{1});
  REQUIRE(g.holder);
  CHECK(g.holder->block == a);
  CHECK(g.held_alike == 1);
}

TEST_CASE("a runtime's narrow references are read as 32-bit words, and only a word at a block's "
          "start refers to it when the runtime says so") {
  // HotSpot's shape: objects hold each other by 32-bit words n standing for base + (n << 3), and
  // a reference is an object's start.
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kData, 0x1000, FakeRegion{true, "/app", {}, UINT64_MAX, true});
  const uint64_t base = kHeap - 0x8000;
  auto narrow = [&](uint64_t address) { return static_cast<uint32_t>((address - base) >> 3); };
  const uint64_t a = kHeap + 0x1000, b = kHeap + 0x2000, c = kHeap + 0x3000;
  const uint64_t held = kHeap + 0x10000, dropped = kHeap + 0x30000;
  m.put32(a + 0x0c, narrow(held));        // a reference, at a 4-byte offset
  m.put32(b + 0x10, narrow(held + 0x80)); // an int that decodes to inside the buffer
  m.put64(c + 0x08, held);                // an 8-byte word of the heap: no reference there
  m.put64(kData + 0x40, held + 0x20);     // a global pointing inside: no reference
  m.put64(kData + 0x48, held);            // a global pointing at its start
  m.put32(a + 0x20, 0);                   // 0 is null, not the base
  const std::vector<HolderTarget> targets = {{held, 0x10000, AllocState::Used, 0},
                                             {dropped, 0x10000, AllocState::Used, 0}};
  const std::vector<std::pair<uint64_t, uint64_t>> blocks = {
      {a, 0x100}, {b, 0x100}, {c, 0x100}, {held, 0x10000}, {dropped, 0x10000}};
  auto run = runPass(m, blocks, targets, kDefaultHolderBudget, 2, [&](HeapWalkResult &heap) {
    heap.narrow_references = HeapWalkResult::NarrowReferences{base, 3};
    heap.references_at_start = true;
  });
  const Holders &h = run->holders;
  REQUIRE(h.buffers.size() == 2);
  REQUIRE(h.buffers[0].holders.size() == 2);
  CHECK(h.buffers[0].references == 2);
  CHECK(h.buffers[0].holders[0].kind == HolderKind::Global);
  CHECK(h.buffers[0].holders[0].slot == kData + 0x48);
  CHECK(h.buffers[0].holders[1].kind == HolderKind::Heap);
  CHECK(h.buffers[0].holders[1].block == a);
  CHECK(h.buffers[0].holders[1].offset() == 0x0c);
  CHECK(h.buffers[0].holders[1].points_to == held);
  CHECK(h.buffers[1].verdict == Verdict::Unreferenced);
  CHECK(h.buffers[1].references == 0);

  // Without the runtime's word on its references, the same memory reads as 8-byte pointers:
  // the heap word and the interior global hold it, the narrow one does not.
  auto wide = runPass(m, blocks, targets, kDefaultHolderBudget, 1);
  REQUIRE(wide->holders.buffers[0].holders.size() == 3);
  CHECK(wide->holders.buffers[0].holders[0].slot == kData + 0x40);
  CHECK(wide->holders.buffers[0].holders[1].slot == kData + 0x48);
  CHECK(wide->holders.buffers[0].holders[2].block == c);
}

TEST_CASE("a region of words all pointing into one buffer is counted, not listed; a cycle of "
          "holders ends") {
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kOther, kOtherSize);
  const uint64_t target = kHeap + 0x10000;
  for (uint64_t at = kOther; at < kOther + kOtherSize; at += 8)
    m.put64(at, target + (at & 0xff8));
  // Two blocks holding each other and a second buffer, which no root reaches.
  const uint64_t one = kHeap + 0x1000, other = kHeap + 0x2000, cycled = kHeap + 0x40000;
  m.put64(one + 0x8, other);
  m.put64(other + 0x8, one);
  m.put64(one + 0x10, cycled);
  m.put64(kHeap + kHeapSize - 8, 0);
  const std::vector<HolderTarget> targets = {{target, 0x10000, AllocState::Used, 0},
                                             {cycled, 0x10000, AllocState::Used, 0}};
  for (unsigned threads : {1u, 4u}) {
    auto run = runPass(m, {{one, 0x100}, {other, 0x100}, {target, 0x10000}, {cycled, 0x10000}},
                       targets, kDefaultHolderBudget, threads);
    const BufferHolders &held_in_cycle = run->holders.buffers.at(1);
    CHECK(held_in_cycle.verdict == Verdict::HeapOnly);
    REQUIRE(held_in_cycle.holders.size() == 1);
    CHECK(held_in_cycle.holders[0].block == one);
    CHECK(held_in_cycle.holders[0].offset() == 0x10);
    const BufferHolders &b = run->holders.buffers.at(0);
    CHECK(b.references == kOtherSize / 8);
    CHECK(b.holders.size() == kHoldersShown);
    CHECK(b.holders[0].slot == kOther);
    CHECK(b.verdict == Verdict::Anchored);
    CHECK(b.anchor == HolderKind::Other);
    // 524,288 references into one buffer: said once.
    const std::vector<Diagnostic> warnings = run->diags.warnings();
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].message ==
          "buffer 0x10010000 is referenced by 524,288 words (more than 65,536): memory dense "
          "with words that point into them; the references are counted and the first 8 of each "
          "kind listed");
  }
}

TEST_CASE("more references than the budget give direct holders only, with a warning") {
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  // 256 small blocks, and one large block whose words point at them in turn (and cycle back).
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  for (uint64_t i = 0; i < 256; ++i)
    blocks.push_back({kHeap + i * 0x100, 0x100});
  const uint64_t dense = kHeap + 0x100000, target = kHeap + 0x180000;
  blocks.push_back({dense, 0x40000});
  blocks.push_back({target, 0x10000});
  for (uint64_t at = dense; at < dense + 0x40000; at += 8)
    m.put64(at, kHeap + ((at - dense) / 8 % 256) * 0x100);
  m.put64(kHeap + 0x80, target);
  m.put64(kHeap + kHeapSize - 8, 0);
  const std::vector<HolderTarget> targets = {{target, 0x10000, AllocState::Used, 0}};
  auto run = runPass(m, blocks, targets, /*budget=*/4096, 2);
  const Holders &h = run->holders;
  CHECK(!h.run.reachability);
  CHECK(!h.run.limited.empty());
  REQUIRE(!run->diags.empty());
  CHECK(run->diags.warnings().front().message.find("budget") != std::string::npos);
  // The direct holder is still named; whether a root reaches it is not said.
  REQUIRE(h.buffers[0].holders.size() == 1);
  CHECK(h.buffers[0].holders[0].block == kHeap);
  CHECK(h.buffers[0].verdict == Verdict::Unknown);
}

TEST_CASE(
    "a buffer's opaque bytes are not read: a word there that equals an address is no holder") {
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kData, 0x1000, FakeRegion{true, "/app", {}, UINT64_MAX, true});
  // `image` holds content a format vouched for from +0x10 to +0x8010; its words at +0x100 (inside)
  // and +0x9000 (past the content) both equal an address in `held`.
  const uint64_t image = kHeap + 0x10000, held = kHeap + 0x30000;
  m.put64(kData + 0x40, image);
  m.put64(image + 0x100, held);
  m.put64(image + 0x9000, held + 8);
  m.put64(kHeap + kHeapSize - 8, 0);
  std::vector<HolderTarget> targets = {{image, 0x10000, AllocState::Used, 0},
                                       {held, 0x10000, AllocState::Used, 0}};
  targets[0].opaque_start = image + 0x10;
  targets[0].opaque_length = 0x8000;
  for (unsigned threads : {1u, 4u}) {
    auto run =
        runPass(m, {{image, 0x10000}, {held, 0x10000}}, targets, kDefaultHolderBudget, threads);
    const Holders &h = run->holders;
    CHECK(h.run.opaque_bytes == 0x8000);
    CHECK(h.run.scanned_bytes == 0x1000 + kHeapSize - 0x8000);
    const BufferHolders &b = h.buffers.at(1);
    CHECK(b.references == 1);
    REQUIRE(b.holders.size() == 1);
    CHECK(b.holders[0].slot == image + 0x9000);
    CHECK(b.verdict == Verdict::Anchored);
  }

  // Opaque bytes that run past the block are clipped to it.
  targets[0].opaque_length = UINT64_MAX;
  auto clipped = runPass(m, {{image, 0x10000}, {held, 0x10000}}, targets, kDefaultHolderBudget, 1);
  CHECK(clipped->holders.run.opaque_bytes == 0x10000 - 0x10);
  CHECK(clipped->holders.buffers.at(1).references == 0);
}

namespace {

/// A managed heap's finder over a table of objects: each with its type, its fields by offset and
/// whether its words may hold references.
class TableFinder final : public ObjectFinder {
public:
  struct Object {
    uint64_t start, size;
    std::string type;
    std::map<uint64_t, std::string> fields; // offset -> name
    bool references = true;
  };
  explicit TableFinder(std::vector<Object> objects) : objects_(std::move(objects)) {}

  std::optional<HeldIn> objectHolding(uint64_t slot) override {
    for (const Object &o : objects_)
      if (slot >= o.start && slot < o.start + o.size) {
        HeldIn in{o.start, o.size, o.type, "", o.references};
        if (auto f = o.fields.find(slot - o.start); f != o.fields.end())
          in.field = f->second;
        return in;
      }
    return std::nullopt;
  }
  uint64_t objectCount() const override { return objects_.size(); }
  void eachObject(
      llvm::function_ref<void(uint64_t start, uint64_t size, bool references)> each) override {
    for (const Object &o : objects_)
      each(o.start, o.size, o.references);
  }

private:
  std::vector<Object> objects_;
};

} // namespace

TEST_CASE("a managed walker's finder gives the objects it does not list: paths run through them, "
          "a buffer only unreachable objects hold is heap-only, and the group names its owner") {
  // A .NET-shaped heap whose walker lists its byte arrays only: a global holds the statics array,
  // whose element holds a Channel, whose _rented field holds a List, whose _items holds the
  // byte[][] whose element [0] holds the buffer. An object no root reaches holds a second
  // buffer; a byte array (no references) holds the third's address.
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kData, 0x1000, FakeRegion{true, "/app", {}, UINT64_MAX, true});
  const uint64_t statics = kHeap + 0x100, channel = kHeap + 0x200, list = kHeap + 0x300,
                 items = kHeap + 0x400, orphan = kHeap + 0x500, bytes = kHeap + 0x600;
  const uint64_t held = kHeap + 0x10000, lost = kHeap + 0x30000, dropped = kHeap + 0x50000;
  m.put64(kData + 0x40, statics);
  m.put64(statics + 0x28, channel);
  m.put64(channel + 0x10, list);
  m.put64(list + 0x08, items);
  m.put64(items + 0x10, held);
  m.put64(orphan + 0x08, lost);
  m.put64(bytes + 0x18, dropped);
  using O = TableFinder::Object;
  auto finder = std::make_shared<TableFinder>(std::vector<O>{
      O{statics, 0x80, "System.Object[]", {{0x28, "[3]"}}},
      O{channel, 0x40, "RabbitMQ.Client.Impl.Channel", {{0x10, "_rented"}}},
      O{list, 0x40, "System.Collections.Generic.List`1<System.Byte[]>", {{0x08, "_items"}}},
      O{items, 0x40, "System.Byte[][]", {{0x10, "[0]"}}},
      O{orphan, 0x40, "Demo.Orphan", {{0x08, "_buffer"}}},
      O{bytes, 0x40, "System.Byte[]", {}, false}, O{held, 0x10000, "System.Byte[]", {}, false},
      O{lost, 0x10000, "System.Byte[]", {}, false},
      O{dropped, 0x10000, "System.Byte[]", {}, false}});
  const std::vector<HolderTarget> targets = {{held, 0x10000, AllocState::Used, 0},
                                             {lost, 0x10000, AllocState::Used, 0},
                                             {dropped, 0x10000, AllocState::Used, 0}};
  const std::vector<std::pair<uint64_t, uint64_t>> listed = {
      {bytes, 0x40}, {held, 0x10000}, {lost, 0x10000}, {dropped, 0x10000}};
  auto clr = [&](HeapWalkResult &heap) {
    heap.walker = "coreclr";
    heap.objects = finder;
  };
  auto run = runPass(m, listed, targets, kDefaultHolderBudget, 1, clr);
  const Holders &h = run->holders;
  CHECK(run->diags.empty()); // the listed blocks the finder gives again are one entry each
  CHECK(h.run.blocks == 9);
  REQUIRE(h.buffers.size() == 3);

  const BufferHolders &b = h.buffers[0];
  CHECK(b.verdict == Verdict::Anchored);
  CHECK(b.anchor == HolderKind::Global);
  REQUIRE(b.path.size() == 5);
  CHECK(b.path_steps == 5);
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"System.Byte[][]", "[0]"},
      {"System.Collections.Generic.List`1<System.Byte[]>", "_items"},
      {"RabbitMQ.Client.Impl.Channel", "_rented"},
      {"System.Object[]", "[3]"}};
  const std::vector<uint64_t> objects = {items, list, channel, statics};
  for (size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i);
    CHECK(b.path[i].kind == HolderKind::Heap);
    CHECK(b.path[i].class_name == steps[i].first);
    CHECK(b.path[i].field == steps[i].second);
    CHECK(b.path[i].block == objects[i]);
    CHECK(b.path[i].points_to == (i ? objects[i - 1] : held));
  }
  CHECK(b.path[4].kind == HolderKind::Global);
  CHECK(b.path[4].slot == kData + 0x40);

  // Held only by an object no root reaches; the third's address lies in a byte array only.
  CHECK(h.buffers[1].verdict == Verdict::HeapOnly);
  REQUIRE(h.buffers[1].holders.size() == 1);
  CHECK(h.buffers[1].holders[0].class_name == "Demo.Orphan");
  CHECK(h.buffers[2].verdict == Verdict::Unreferenced);
  CHECK(h.buffers[2].holders.empty());

  // The owner: the first object outside System.* on the path.
  const GroupHolders g = summarizeHolders(h, std::vector<size_t>{0});
  REQUIRE(g.holder);
  CHECK(g.holder->class_name == "System.Byte[][]");
  REQUIRE(g.owner);
  CHECK(g.owner->class_name == "RabbitMQ.Client.Impl.Channel");
  CHECK(g.owner->field == "_rented");
  CHECK(g.owned_alike == 1);
  CHECK_FALSE(summarizeHolders(h, std::vector<size_t>{1}).owner); // its holder is the owner

  // A budget too small for the objects: the walker's listing stays partial, nothing is decided
  // that an unlisted object could change.
  auto small = runPass(m, listed, targets, 8, 1, clr);
  CHECK(small->holders.run.blocks == 4);
  CHECK(small->holders.buffers[0].verdict == Verdict::Unknown);
  CHECK(small->holders.buffers[0].path.empty());
}

TEST_CASE("a runtime's own stacks are roots from their saved stack pointer up, and the walk that "
          "read them all decides the verdicts of its heap") {
  // A Go-shaped heap: its objects and, in its areas, a goroutine's stack whose live part starts at
  // the stack pointer the goroutine saved; below it, dead stack.
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  const uint64_t stack = kHeap + 0x100000, sp = stack + 0x800, top = stack + 0x2000;
  const uint64_t held = kHeap + 0x10000, stale = kHeap + 0x30000, dropped = kHeap + 0x50000;
  m.put64(sp + 0x10, held);      // a live frame's local
  m.put64(stack + 0x100, stale); // dead stack
  const std::vector<HolderTarget> targets = {{held, 0x10000, AllocState::Used, 0},
                                             {stale, 0x10000, AllocState::Used, 0},
                                             {dropped, 0x10000, AllocState::Used, 0}};
  const std::vector<std::pair<uint64_t, uint64_t>> blocks = {
      {held, 0x10000}, {stale, 0x10000}, {dropped, 0x10000}};
  auto go = [&](bool read_all) {
    return [=](HeapWalkResult &heap) {
      heap.walker = "go";
      heap.areas = {{"spans", kHeap, 0x100000, 0}, {"goroutine-stacks", stack, 0x2000, 0}};
      if (read_all) {
        heap.live_stacks = {{"goroutine", sp, top - sp, 7}};
        heap.every_object_listed = true;
      }
    };
  };
  auto run = runPass(m, blocks, targets, kDefaultHolderBudget, 1, go(true));
  const Holders &h = run->holders;
  REQUIRE(h.buffers.size() == 3);
  CHECK(h.buffers[0].verdict == Verdict::Anchored);
  CHECK(h.buffers[0].anchor == HolderKind::Stack);
  REQUIRE(h.buffers[0].holders.size() == 1);
  CHECK(h.buffers[0].holders[0].kind == HolderKind::Stack);
  CHECK(h.buffers[0].holders[0].goroutine == 7);
  CHECK(h.buffers[0].holders[0].slot == sp + 0x10);
  CHECK(h.buffers[1].verdict == Verdict::Unreferenced); // only dead stack points at it
  CHECK(h.buffers[1].references == 0);
  CHECK(h.buffers[2].verdict == Verdict::Unreferenced);

  // Without the goroutines: the stack area's words may be any goroutine's, nothing is decided
  // that they could change.
  auto unread = runPass(m, blocks, targets, kDefaultHolderBudget, 1, go(false));
  CHECK(unread->holders.buffers[0].verdict == Verdict::Unknown);
  CHECK(unread->holders.buffers[1].verdict == Verdict::Unknown);
  CHECK(unread->holders.buffers[2].verdict == Verdict::Unknown);
}

TEST_CASE("the whole pages of a walker's bookkeeping are not read, and a word there is no "
          "holder") {
  FakeMemory m;
  m.addRegion(kHeap, kHeapSize);
  m.addRegion(kData, 0x1000, FakeRegion{true, "/app", {}, UINT64_MAX, true});
  // A runtime's unused memory from +0x100 to +0x3100 of the heap's start (two whole pages,
  // 0x1000..0x3000), with words at `held` in its whole pages and in its partial ones.
  const uint64_t held = kHeap + 0x30000;
  m.put64(kHeap + 0x1800, held);
  m.put64(kHeap + 0x200, held + 8);
  m.put64(kData + 0x40, held + 16);
  m.put64(kHeap + kHeapSize - 8, 0);
  const std::vector<HolderTarget> targets = {{held, 0x10000, AllocState::Used, 0}};
  for (unsigned threads : {1u, 4u}) {
    auto run = runPass(m, {{held, 0x10000}}, targets, kDefaultHolderBudget, threads,
                       [&](HeapWalkResult &heap) {
                         heap.bookkeeping.push_back({"free", kHeap + 0x100, 0x3000, 0});
                       });
    const Holders &h = run->holders;
    CHECK(h.run.opaque_bytes == 0);
    CHECK(h.run.scanned_bytes == 0x1000 + kHeapSize - 0x2000);
    const BufferHolders &b = h.buffers.at(0);
    CHECK(b.references == 1); // the global; neither bookkeeping word counts
    REQUIRE(b.holders.size() == 1);
    CHECK(b.holders[0].kind == HolderKind::Global);
  }
}
