// The holders pass (holders.h): the directory, the reference pass, the graph of references
// between blocks and the search from the roots, and what each buffer is told.
#include "dumpsift/holders/holders.h"

#include "directory.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "names.h"
#include "reference_pass.h"

#include "llvm/Support/Path.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace dumpsift {

using namespace holders;

llvm::StringRef holdersModeName(HoldersMode mode) {
  switch (mode) {
  case HoldersMode::None:
    return "none";
  case HoldersMode::Direct:
    return "direct";
  case HoldersMode::Chains:
    return "chains";
  }
  return "none";
}

std::optional<HoldersMode> parseHoldersMode(llvm::StringRef name) {
  for (HoldersMode m : {HoldersMode::None, HoldersMode::Direct, HoldersMode::Chains})
    if (holdersModeName(m) == name)
      return m;
  return std::nullopt;
}

llvm::StringRef holderKindName(HolderKind kind) {
  switch (kind) {
  case HolderKind::Heap:
    return "heap";
  case HolderKind::Stack:
    return "stack";
  case HolderKind::Register:
    return "register";
  case HolderKind::Global:
    return "global";
  case HolderKind::Other:
    return "other";
  }
  return "other";
}

llvm::StringRef verdictName(Verdict verdict) {
  switch (verdict) {
  case Verdict::Anchored:
    return "anchored";
  case Verdict::HeapOnly:
    return "heap-only";
  case Verdict::Unreferenced:
    return "unreferenced";
  case Verdict::Free:
    return "free";
  case Verdict::Unknown:
    return "unknown";
  }
  return "unknown";
}

namespace {

/// The order holders are listed in: globals, stacks, registers, other memory, then the heap.
int kindRank(HolderKind kind) {
  switch (kind) {
  case HolderKind::Global:
    return 0;
  case HolderKind::Stack:
    return 1;
  case HolderKind::Register:
    return 2;
  case HolderKind::Other:
    return 3;
  case HolderKind::Heap:
    return 4;
  }
  return 5;
}

/// The references between nodes as compressed rows: the references out of node n are
/// [first[n], first[n + 1]) of `to` and `offset` (the offset of the word in n).
struct Graph {
  std::vector<uint32_t> first, to, offset;
};

/// Builds the graph of `pieces`' edges by a counting sort on the source node; `nodes` nodes.
Graph buildGraph(std::vector<PieceHits> &pieces, size_t nodes) {
  Graph g;
  g.first.assign(nodes + 1, 0);
  for (const PieceHits &p : pieces)
    for (const Edge &e : p.edges)
      ++g.first[e.src + 1];
  for (size_t n = 0; n < nodes; ++n)
    g.first[n + 1] += g.first[n];
  g.to.resize(g.first[nodes]);
  g.offset.resize(g.first[nodes]);
  std::vector<uint32_t> next(g.first.begin(), g.first.end() - 1);
  for (PieceHits &p : pieces) {
    for (const Edge &e : p.edges) {
      const uint32_t at = next[e.src]++;
      g.to[at] = e.dst;
      g.offset[at] = e.offset;
    }
    p.edges = {};
  }
  return g;
}

/// What the search from the roots found for every node.
struct Reach {
  static constexpr uint32_t kUnreached = kNoEntry;
  /// The node that holds it on a shortest path (kNoEntry: a root holds it, or it is unreached),
  /// and the offset of the word in that node.
  std::vector<uint32_t> parent, parent_offset;
  /// The root that starts its path (an index into the sorted roots); kUnreached when none does.
  std::vector<uint32_t> root;
  /// Nodes that an object its walker does not list may hold (and what those hold).
  std::vector<bool> maybe_held;
};

/// Breadth-first from every root (in `roots`' order) along the graph, then from the nodes held by
/// unlisted objects for maybe_held.
Reach search(const Graph &g, const std::vector<RootRef> &roots,
             const std::vector<uint32_t> &unlisted, size_t nodes) {
  Reach r;
  r.parent.assign(nodes, kNoEntry);
  r.parent_offset.assign(nodes, 0);
  r.root.assign(nodes, Reach::kUnreached);
  r.maybe_held.assign(nodes, false);
  std::deque<uint32_t> queue;
  for (size_t i = 0; i < roots.size(); ++i)
    if (r.root[roots[i].node] == Reach::kUnreached) {
      r.root[roots[i].node] = static_cast<uint32_t>(i);
      queue.push_back(roots[i].node);
    }
  while (!queue.empty()) {
    const uint32_t n = queue.front();
    queue.pop_front();
    for (uint32_t e = g.first[n]; e < g.first[n + 1]; ++e) {
      const uint32_t m = g.to[e];
      if (r.root[m] != Reach::kUnreached)
        continue;
      r.root[m] = r.root[n];
      r.parent[m] = n;
      r.parent_offset[m] = g.offset[e];
      queue.push_back(m);
    }
  }
  for (uint32_t n : unlisted)
    if (!r.maybe_held[n]) {
      r.maybe_held[n] = true;
      queue.push_back(n);
    }
  while (!queue.empty()) {
    const uint32_t n = queue.front();
    queue.pop_front();
    for (uint32_t e = g.first[n]; e < g.first[n + 1]; ++e)
      if (!r.maybe_held[g.to[e]]) {
        r.maybe_held[g.to[e]] = true;
        queue.push_back(g.to[e]);
      }
  }
  return r;
}

/// Turns slots and nodes into named holders.
class HolderNamer {
public:
  HolderNamer(const AddressSpace &memory, llvm::ArrayRef<HeapWalkResult> heaps,
              const Directory &nodes, Names &names, llvm::UniqueStringSaver &strings)
      : memory_(memory), heaps_(heaps), nodes_(nodes), names_(names), strings_(strings),
        runtime_stacks_(runtimeStacks(heaps)) {}

  /// The holder in block `node` at `slot`.
  Holder heap(uint32_t node, uint64_t slot, uint64_t points_to) {
    Holder h;
    h.kind = HolderKind::Heap;
    h.slot = slot;
    h.points_to = points_to;
    h.block = nodes_.starts[node];
    h.block_size = nodes_.ends[node] - nodes_.starts[node];
    const uint16_t heap = nodes_.heaps[node];
    if (heap < heaps_.size())
      h.walker = strings_.save(heaps_[heap].walker);
    if (heap < heaps_.size() && heaps_[heap].objects)
      nameObject(h, *heaps_[heap].objects);
    else if (!nameStatic(h))
      h.class_name = names_.classOf(h.block);
    nameHandle(h, /*set_walker=*/false); // a runtime's handles in another allocator's block (Mono)
    return h;
  }

  /// False when the walker whose object holds `ref`'s slot says that word is no reference.
  bool isReference(const TargetRef &ref) {
    uint32_t heap;
    if (ref.is_register)
      return true;
    if (ref.from.cls == SlotClass::Heap)
      heap = nodes_.heaps[ref.from.node];
    else if (ref.from.cls == SlotClass::Unlisted)
      heap = ref.from.where;
    else
      return true;
    if (heap >= heaps_.size() || !heaps_[heap].objects)
      return true;
    const std::optional<HeldIn> in = heaps_[heap].objects->objectHolding(ref.slot);
    return !in || in->reference;
  }

  /// The holder of a word of class `cls` (not Heap) at `slot`; `where` as Slot::where.
  Holder place(HolderKind kind, uint64_t slot, uint32_t where, uint64_t points_to) {
    const Snapshot &snap = memory_.snapshot();
    Holder h;
    h.kind = kind;
    h.slot = slot;
    h.points_to = points_to;
    switch (kind) {
    case HolderKind::Register: {
      const size_t t = where / 256, r = where % 256;
      if (t < snap.threads.size() && r < snap.threads[t].registers.size()) {
        h.thread = snap.threads[t].tid;
        h.register_name = strings_.save(snap.threads[t].registers[r].name);
      }
      break;
    }
    case HolderKind::Stack:
      if (where < snap.threads.size())
        h.thread = snap.threads[where].tid;
      else if (where - snap.threads.size() < runtime_stacks_.size())
        h.goroutine = runtime_stacks_[where - snap.threads.size()].arena;
      nameFrame(h);
      break;
    case HolderKind::Global:
      if (where < snap.modules.size()) {
        const Module &m = snap.modules[where];
        h.module = strings_.save(llvm::sys::path::filename(m.path));
        if (auto symbol = names_.globalAt(m, slot)) {
          h.symbol = symbol->first;
          h.symbol_offset = slot - symbol->second;
        } else {
          h.symbol_offset = slot - m.start;
        }
      }
      break;
    case HolderKind::Heap: // an object its walker does not list: found (and named) by it
      if (where < heaps_.size()) {
        h.walker = strings_.save(heaps_[where].walker);
        if (heaps_[where].objects)
          nameObject(h, *heaps_[where].objects);
      }
      break;
    case HolderKind::Other:
      break;
    }
    if (kind == HolderKind::Other || kind == HolderKind::Global)
      nameHandle(h);
    return h;
  }

private:
  /// Sets h.function when a walker told apart the frame of the stack that holds h.slot.
  void nameFrame(Holder &h) {
    for (const HeapWalkResult &heap : heaps_) {
      const std::vector<HeapArea> &frames = heap.stack_frames;
      auto it = std::upper_bound(frames.begin(), frames.end(), h.slot,
                                 [](uint64_t s, const HeapArea &a) { return s < a.start; });
      if (it != frames.begin() && h.slot - std::prev(it)->start < std::prev(it)->size) {
        h.function = strings_.save(std::prev(it)->kind);
        return;
      }
    }
  }

  /// Sets h.handle, and h.walker with `set_walker`, when h.slot is a slot of a runtime's handle (a
  /// GC handle, an OopStorage slot): what keeps the object alive is then that handle.
  void nameHandle(Holder &h, bool set_walker = true) {
    for (const HeapWalkResult &heap : heaps_) {
      auto it = std::upper_bound(heap.handles.begin(), heap.handles.end(), h.slot,
                                 [](uint64_t s, const HeapArea &a) { return s < a.start; });
      if (it != heap.handles.begin() && h.slot - std::prev(it)->start < std::prev(it)->size) {
        h.handle = strings_.save(std::prev(it)->kind);
        if (set_walker)
          h.walker = strings_.save(heap.walker);
        return;
      }
    }
  }

  /// Names h, a word of a block of another allocator, as the static field of a runtime that keeps
  /// its statics there (Mono); false when no runtime's finder knows the word.
  bool nameStatic(Holder &h) {
    for (const HeapWalkResult &heap : heaps_) {
      if (!heap.objects)
        continue;
      const std::optional<HeldIn> in = heap.objects->staticHolding(h.slot);
      if (!in)
        continue;
      h.class_name = in->type.empty() ? llvm::StringRef() : strings_.save(in->type);
      h.field = in->field.empty() ? llvm::StringRef() : strings_.save(in->field);
      h.is_static = in->is_static;
      return true;
    }
    return false;
  }

  /// Sets the managed object holding h.slot, its type and field, from its walker's finder; leaves
  /// `h` as it is when the finder knows no object there.
  void nameObject(Holder &h, ObjectFinder &objects) {
    const std::optional<HeldIn> in = objects.objectHolding(h.slot);
    if (!in)
      return;
    h.block = in->object;
    h.block_size = in->size;
    h.class_name = in->type.empty() ? llvm::StringRef() : strings_.save(in->type);
    h.field = in->field.empty() ? llvm::StringRef() : strings_.save(in->field);
    h.is_static = in->is_static;
  }

  const AddressSpace &memory_;
  llvm::ArrayRef<HeapWalkResult> heaps_;
  const Directory &nodes_;
  Names &names_;
  llvm::UniqueStringSaver &strings_;
  std::vector<HeapArea> runtime_stacks_;
};

/// References into one buffer past which the run says that memory dense with them was met.
constexpr uint64_t kDenseReferences = 65536;

/// One warning for the buffers referenced by more than kDenseReferences words (a pointer array
/// of that many entries into one buffer, or hostile memory): their references are counted and the
/// first of each kind listed, so the report stays small, but the count says something unusual.
void warnDenseReferences(const std::vector<BufferHolders> &buffers,
                         llvm::ArrayRef<HolderTarget> targets, Diagnostics &diags) {
  uint64_t dense = 0;
  size_t densest = 0;
  for (size_t t = 0; t < buffers.size(); ++t)
    if (buffers[t].references > kDenseReferences &&
        (!dense++ || buffers[t].references > buffers[densest].references))
      densest = t;
  if (!dense)
    return;
  const std::string address = hexAddress(targets[densest].address);
  const std::string count = groupedDigits(buffers[densest].references);
  const std::string limit = groupedDigits(kDenseReferences);
  diags.warn("holders",
             (dense == 1 ? "buffer " + address + " is referenced by " + count +
                               " words (more than " + limit + ")"
                         : groupedDigits(dense) + " buffers are each referenced by more than " +
                               limit + " words (the most: " + address + ", by " + count + ")") +
                 ": memory dense with words that point into them; the references are counted "
                 "and the first " +
                 std::to_string(kHoldersShown) + " of each kind listed");
}

/// `ranges` sorted, overlapping and touching ones merged.
std::vector<std::pair<uint64_t, uint64_t>>
mergedRanges(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto &r : ranges)
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  return merged;
}

/// The targets' opaque bytes, each clipped to its block, sorted and merged.
std::vector<std::pair<uint64_t, uint64_t>> opaqueRanges(llvm::ArrayRef<HolderTarget> targets) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const HolderTarget &t : targets) {
    const uint64_t block_end = t.address + t.size;
    if (block_end <= t.address || t.opaque_start < t.address || t.opaque_start >= block_end)
      continue;
    const uint64_t end = t.opaque_start + std::min(t.opaque_length, block_end - t.opaque_start);
    if (end > t.opaque_start)
      ranges.emplace_back(t.opaque_start, end);
  }
  return mergedRanges(std::move(ranges));
}

/// The whole pages of the walkers' bookkeeping (its words are no holder: the pass need not read
/// them), merged, by address. Partial pages are read as before: it saves nothing to skip them.
std::vector<std::pair<uint64_t, uint64_t>> unreadBookkeeping(llvm::ArrayRef<HeapWalkResult> heaps) {
  constexpr uint64_t kPage = 4096;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const HeapWalkResult &heap : heaps)
    for (const HeapArea &a : heap.bookkeeping) {
      const uint64_t start = (a.start + kPage - 1) & ~(kPage - 1);
      const uint64_t end =
          a.start + a.size < a.start ? ~(kPage - 1) : (a.start + a.size) & ~(kPage - 1);
      if (start < end)
        ranges.emplace_back(start, end);
    }
  return mergedRanges(std::move(ranges));
}

} // namespace

Holders findHolders(const AddressSpace &memory, llvm::ArrayRef<HeapWalkResult> heaps,
                    BlockDirectoryBuilder directory, llvm::ArrayRef<HolderTarget> targets,
                    const HoldersOptions &options, Diagnostics &diags, ProgressFn progress) {
  Holders out;
  out.string_memory = std::make_unique<llvm::BumpPtrAllocator>();
  out.strings = std::make_unique<llvm::UniqueStringSaver>(*out.string_memory);
  HoldersRun &run = out.run;
  run.requested = options.mode;
  out.buffers.resize(targets.size());
  for (size_t t = 0; t < targets.size(); ++t)
    if (targets[t].state == AllocState::Free)
      out.buffers[t].verdict = Verdict::Free;
  if (options.mode == HoldersMode::None || targets.empty())
    return out;
  progress("indexing blocks for holders", 0, 0); // its own phase in --timings
  const Snapshot &snap = memory.snapshot();

  // The nodes: every listed block within the budget, else the targets alone.
  const bool directory_over = directory.overBudget();
  std::vector<uint32_t> target_entries;
  uint64_t dropped = 0;
  // Direct holders need no directory of every block: the walkers' areas then hold unlisted words.
  const bool every_block = options.mode == HoldersMode::Chains && !directory_over;
  Lanes lanes = directory.takeLanes();
  // With chains, the objects a managed walker does not list are nodes too where its finder gives
  // them and the budget holds them: paths to roots then run through them.
  std::vector<bool> completed;
  if (every_block)
    completed = addFinderObjects(lanes, heaps, options.budget);
  const std::vector<bool> partial = partialHeaps(heaps, completed);
  Directory nodes = buildDirectory(std::move(lanes), partial, targets, target_entries, dropped);
  run.heap_holders_named = every_block;
  run.ran = options.mode;
  if (directory_over && options.mode == HoldersMode::Chains) {
    run.ran = HoldersMode::Direct;
    run.limited = "more blocks than the budget of " + std::to_string(options.budget) +
                  ": direct holders only, heap holders not named";
    diags.warn("holders", "the heaps list more blocks than the holders budget (" +
                              std::to_string(options.budget) +
                              "): reachability not computed, direct holders only");
  }
  run.blocks = nodes.size();

  // The probe: every node for chains, the targets alone for direct holders.
  const bool chains = run.ran == HoldersMode::Chains;
  Directory target_only;
  std::vector<uint32_t> probe_nodes, probe_targets;
  const Directory *probe = &nodes;
  if (!chains) {
    target_only = targetDirectory(nodes, target_entries);
    probe = &target_only;
    probe_nodes = target_entries;
    probe_targets.resize(targets.size());
    for (size_t t = 0; t < targets.size(); ++t)
      probe_targets[t] = static_cast<uint32_t>(t);
  } else {
    probe_targets.assign(nodes.size(), kNoEntry);
    for (size_t t = 0; t < targets.size(); ++t)
      probe_targets[target_entries[t]] = static_cast<uint32_t>(t);
  }
  // Direct holders over targets the same block names twice: the probe must stay sorted.
  PageFilter filter;
  filter.build(*probe, /*max_bitmaps=*/4096);
  SlotClassifier slots(snap, heaps, partial, nodes, every_block);
  PassPlan plan;
  plan.probe = probe;
  plan.filter = &filter;
  plan.probe_nodes = &probe_nodes;
  plan.probe_targets = &probe_targets;
  plan.slots = &slots;
  plan.edges = chains;
  plan.budget = options.budget;
  plan.threads = options.threads;
  std::vector<std::pair<uint64_t, uint64_t>> opaque = opaqueRanges(targets);
  plan.opaque = &opaque;
  const std::vector<std::pair<uint64_t, uint64_t>> unread = unreadBookkeeping(heaps);
  plan.unread = &unread;
  const std::vector<NarrowZone> narrow = narrowZones(heaps);
  plan.narrow = &narrow;

  bool edges_over = false;
  std::vector<PieceHits> pieces = scanMemory(memory, plan, edges_over, run.opaque_bytes, progress);
  pieces.push_back(scanRegisters(snap, plan));
  for (const PieceHits &p : pieces)
    run.scanned_bytes += p.bytes;
  if (chains && edges_over) {
    run.limited = "more references than the budget of " + std::to_string(options.budget) +
                  ": reachability not computed, direct holders only";
    diags.warn("holders", "the dump holds more references between blocks than the holders "
                          "budget (" +
                              std::to_string(options.budget) +
                              "): reachability not computed, direct holders only");
  }
  run.reachability = chains && !edges_over;

  // The roots, in a fixed order (by kind, then slot, then where): the first to reach a node names
  // its path.
  std::vector<RootRef> roots;
  std::vector<uint32_t> unlisted;
  for (PieceHits &p : pieces) {
    roots.insert(roots.end(), p.roots.begin(), p.roots.end());
    unlisted.insert(unlisted.end(), p.unlisted.begin(), p.unlisted.end());
    p.roots = {};
    p.unlisted = {};
  }
  std::sort(roots.begin(), roots.end(), [](const RootRef &a, const RootRef &b) {
    return std::make_tuple(kindRank(a.kind), a.slot, a.where, a.node) <
           std::make_tuple(kindRank(b.kind), b.slot, b.where, b.node);
  });
  for (const RootRef &r : roots)
    ++run.roots[static_cast<size_t>(r.kind)];
  for (const PieceHits &p : pieces)
    run.references += p.edges.size();

  Reach reach;
  if (run.reachability) {
    Graph graph = buildGraph(pieces, nodes.size());
    reach = search(graph, roots, unlisted, nodes.size());
  }

  // Each target's holders and verdict.
  ModuleFiles files(memory, options.module_paths, options.module_files);
  Names names(memory, files, *out.strings);
  HolderNamer namer(memory, heaps, nodes, names, *out.strings);
  std::vector<std::vector<TargetRef>> refs(targets.size());
  for (const PieceHits &p : pieces) {
    for (const TargetRef &ref : p.target_refs)
      refs[ref.target].push_back(ref);
    for (const auto &[target, count] : p.target_counts)
      out.buffers[target].references += count;
  }
  warnDenseReferences(out.buffers, targets, diags);
  for (size_t t = 0; t < targets.size(); ++t) {
    BufferHolders &b = out.buffers[t];
    std::vector<Holder> &list = b.holders;
    for (const TargetRef &ref : refs[t]) {
      if (!namer.isReference(ref)) {
        --b.references; // a word whose bits only look like the buffer's address
        continue;
      }
      if (ref.is_register)
        list.push_back(namer.place(HolderKind::Register, 0, ref.from.where, ref.value));
      else if (ref.from.cls == SlotClass::Heap)
        list.push_back(namer.heap(ref.from.node, ref.slot, ref.value));
      else
        list.push_back(
            namer.place(holderKindOf(ref.from.cls), ref.slot, ref.from.where, ref.value));
    }
    std::stable_sort(list.begin(), list.end(), [](const Holder &x, const Holder &y) {
      return std::make_tuple(kindRank(x.kind), x.slot, x.register_name, x.thread) <
             std::make_tuple(kindRank(y.kind), y.slot, y.register_name, y.thread);
    });
    if (list.size() > kHoldersShown)
      list.resize(kHoldersShown);
    if (b.verdict == Verdict::Free)
      continue;
    const uint32_t node = target_entries[t];
    const bool partial = nodes.flags[node] & kPartial;
    // A runtime none of whose references the pass misses: with none, nothing holds the object,
    // whether its walker lists the others or not.
    const uint16_t heap = nodes.heaps[node];
    if (b.references == 0 && heap < heaps.size() && heaps[heap].every_reference_seen) {
      b.verdict = Verdict::Unreferenced;
      continue;
    }
    if (!run.reachability) {
      b.verdict = b.references == 0 && !partial ? Verdict::Unreferenced : Verdict::Unknown;
      continue;
    }
    if (reach.root[node] == Reach::kUnreached) {
      if (partial || reach.maybe_held[node])
        b.verdict = Verdict::Unknown;
      else
        b.verdict = b.references ? Verdict::HeapOnly : Verdict::Unreferenced;
      continue;
    }
    b.verdict = Verdict::Anchored;
    const RootRef &root = roots[reach.root[node]];
    b.anchor = root.kind;
    // The path: each step the holder of the one before, up to the root.
    uint32_t at = node;
    while (reach.parent[at] != kNoEntry) {
      const uint32_t holder = reach.parent[at];
      if (b.path.size() < kPathStepsShown)
        b.path.push_back(
            namer.heap(holder, nodes.starts[holder] + reach.parent_offset[at], nodes.starts[at]));
      ++b.path_steps;
      at = holder;
    }
    if (b.path.size() < kPathStepsShown) {
      if (root.kind == HolderKind::Register)
        b.path.push_back(namer.place(root.kind, 0, root.where, nodes.starts[at]));
      else
        b.path.push_back(namer.place(root.kind, root.slot, root.where, nodes.starts[at]));
    }
    ++b.path_steps;
  }

  for (const ModuleFile *f : files.filesUsed())
    run.module_files.push_back(
        f->buildIdChecked() ? f->path() : f->path() + " (named, build ID not in the dump)");
  for (const Module &m : snap.modules)
    if (std::string why = files.whyNot(m); !why.empty())
      run.modules_unread.push_back(m.path + ": " + why);
  if (dropped)
    diags.warn("holders", std::to_string(dropped) +
                              " blocks overlap another listed block: left out of the directory");
  return out;
}

namespace {

/// What makes two holders alike in a summary: their kind and what names them (the elements of an
/// array are alike, whatever their index).
auto shapeOf(const Holder &h) {
  const llvm::StringRef field = h.field.startswith("[") ? "[]" : h.field;
  return std::make_tuple(h.kind, h.class_name, field, h.is_static, h.module, h.symbol, h.walker,
                         h.handle, h.thread, h.goroutine, h.function, h.register_name,
                         h.kind == HolderKind::Heap && h.class_name.empty() ? h.block_size : 0);
}

/// True when `type` lies in one of `namespaces` (a prefix of its name).
bool inFramework(llvm::StringRef type, const std::vector<llvm::StringRef> &namespaces) {
  return std::any_of(namespaces.begin(), namespaces.end(),
                     [&](llvm::StringRef prefix) { return type.startswith(prefix); });
}

/// The first step of `b`'s path in an object whose type lies outside its runtime's framework, or
/// nullptr: the search ends at a root, at an object without a type name or at a runtime that
/// names no framework.
const Holder *ownerOf(const BufferHolders &b) {
  for (const Holder &step : b.path) {
    if (step.kind != HolderKind::Heap || step.class_name.empty() || step.is_static)
      return nullptr; // a static is the path's root (pathRoot)
    const HeapWalker *walker = findHeapWalker(step.walker);
    if (!walker || walker->traits().framework_namespaces.empty())
      return nullptr;
    if (!inFramework(step.class_name, walker->traits().framework_namespaces))
      return &step;
  }
  return nullptr;
}

} // namespace

const Holder &pathRoot(const BufferHolders &b) {
  for (const Holder &step : b.path)
    if (step.kind == HolderKind::Heap && step.is_static)
      return step;
  return b.path.back();
}

GroupHolders summarizeHolders(const Holders &holders, llvm::ArrayRef<size_t> members) {
  GroupHolders g;
  g.members = members.size();
  using Shape = decltype(shapeOf(Holder{}));
  // count, first member
  std::map<Shape, std::pair<uint64_t, size_t>> holder_shapes, root_shapes, owner_shapes;
  std::map<Verdict, uint64_t> verdicts;
  for (size_t m : members) {
    if (m >= holders.buffers.size())
      continue;
    const BufferHolders &b = holders.buffers[m];
    ++verdicts[b.verdict];
    if (!b.holders.empty()) {
      auto &[count, first] = holder_shapes[shapeOf(b.holders.front())];
      if (count++ == 0)
        first = m;
    }
    if (b.verdict == Verdict::Anchored && !b.path.empty() && b.path_steps == b.path.size()) {
      auto &[count, first] = root_shapes[shapeOf(pathRoot(b))];
      if (count++ == 0)
        first = m;
    }
    if (const Holder *owner = ownerOf(b)) {
      auto &[count, first] = owner_shapes[shapeOf(*owner)];
      if (count++ == 0)
        first = m;
    }
  }
  auto commonest = [](const auto &shapes) {
    auto best = shapes.end();
    for (auto it = shapes.begin(); it != shapes.end(); ++it)
      if (best == shapes.end() || it->second.first > best->second.first ||
          (it->second.first == best->second.first && it->second.second < best->second.second))
        best = it;
    return best;
  };
  if (auto best = commonest(holder_shapes); best != holder_shapes.end()) {
    g.held_alike = best->second.first;
    g.holder = holders.buffers[best->second.second].holders.front();
    for (size_t m : members)
      if (m < holders.buffers.size() && !holders.buffers[m].holders.empty() &&
          shapeOf(holders.buffers[m].holders.front()) == best->first &&
          holders.buffers[m].holders.front().offset() != g.holder->offset())
        g.same_offset = false;
  }
  if (auto best = commonest(root_shapes); best != root_shapes.end()) {
    g.rooted_alike = best->second.first;
    g.root = pathRoot(holders.buffers[best->second.second]);
  }
  if (auto best = commonest(owner_shapes);
      best != owner_shapes.end() && !(g.holder && shapeOf(*g.holder) == best->first)) {
    g.owned_alike = best->second.first;
    g.owner = *ownerOf(holders.buffers[best->second.second]);
  }
  for (const auto &[verdict, count] : verdicts)
    g.verdicts.emplace_back(verdict, count);
  std::stable_sort(g.verdicts.begin(), g.verdicts.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  return g;
}

} // namespace dumpsift
