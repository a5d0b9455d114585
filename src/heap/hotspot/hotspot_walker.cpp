// The "hotspot" walker: every Java primitive array in a HotSpot heap, found by a linear parse of
// each space from bottom to top, object by object, as the serviceability agent does
// (ObjectHeap.java), but reading only the dump. An object's class comes from its header; the
// class's layout helper sizes it (klass.hpp). docs/heap-hotspot.md describes it all.
#include "hotspot_walker.h"

#include "dumpsift/support/bytes.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "java_objects.h"
#include "jvm.h"
#include "objects.h"

#include <algorithm>
#include <array>

namespace dumpsift {

namespace {

using namespace hotspot;

/// One walk of one JVM's heap.
class HeapWalk {
public:
  HeapWalk(const AddressSpace &memory, const Jvm &jvm, AllocationSink sink, Diagnostics &diags)
      : memory_(memory), parser_(memory, jvm), jvm_(jvm), sink_(sink), diags_(diags) {}

  /// Walks every space; gives the walk's figures to `result` and returns the marks of the objects
  /// found, for the holders pass's object finder.
  ObjectMarks run(HeapWalkResult &result) {
    size_t gap = 0;
    // Every object header is read, so the walk would map every page of the small objects'
    // spaces: the pages go once the walk has passed them (the spaces come in address order).
    ReleaseBehind behind(memory_, jvm_.spaces.empty() ? 0 : jvm_.spaces.front().bottom,
                         jvm_.spaces.empty() ? 0 : jvm_.spaces.back().end);
    behind_ = &behind;
    for (const Space &s : jvm_.spaces) {
      if (s.walk && s.top > s.bottom)
        walkSpace(s, gap);
      behind.passed(s.end);
    }
    behind_ = nullptr;
    result.stats = stats_;
    auto fact = [&](std::string key, std::string value) {
      result.facts.emplace_back(std::move(key), std::move(value));
    };
    fact("hotspot_objects", std::to_string(objects_));
    fact("hotspot_object_bytes", std::to_string(object_bytes_));
    fact("hotspot_primitive_arrays", std::to_string(arrays_));
    fact("hotspot_fillers", std::to_string(stats_.free_count));
    fact("hotspot_filler_arrays", std::to_string(filler_arrays_));
    fact("hotspot_filler_array_bytes", std::to_string(filler_array_bytes_));
    fact("hotspot_klasses", std::to_string(parser_.validKlasses()));
    if (resyncs_)
      fact("hotspot_resyncs", std::to_string(resyncs_));
    return std::move(marks_);
  }

private:
  /// Walks [s.bottom, s.top), skipping the TLAB gaps that start inside it; `gap` indexes the
  /// first gap not yet passed (spaces come in address order). A gap ends at the space's top at the
  /// latest: no TLAB crosses a space.
  void walkSpace(const Space &s, size_t &gap) {
    const std::vector<TlabGap> &gaps = jvm_.tlab_gaps;
    const bool humongous = s.kind == "humongous";
    bool warned = false;
    while (gap < gaps.size() && gaps[gap].start < s.bottom)
      ++gap;
    // Every page of a space of small objects is read: from the file in large requests ahead of
    // the walk. A humongous object's: its header only.
    std::optional<ReadAhead> ahead;
    if (!humongous)
      ahead.emplace(memory_, s.bottom, s.top);
    uint64_t p = s.bottom;
    uint64_t run_limit = 0, walked = 0; // the run of objects being marked for the finder
    while (p < s.top) {
      if (ahead)
        ahead->reached(p);
      while (gap < gaps.size() && gaps[gap].start < s.top && gaps[gap].end <= p)
        ++gap;
      const bool in_space = gap < gaps.size() && gaps[gap].start < s.top;
      if (in_space && gaps[gap].start <= p) {
        p = std::max(p, std::min(gaps[gap].end, s.top));
        ++gap;
        continue;
      }
      const uint64_t limit = in_space ? gaps[gap].start : s.top;
      Object o;
      // A humongous object starts its region and runs on into the next ones.
      if (parser_.parse(p, humongous ? 0 : limit, o)) {
        const uint64_t run_end = humongous ? p + o.size : limit;
        if (run_end != run_limit)
          run_limit = run_end, walked = 0;
        marks_.note(p, run_end, walked);
        emit(s, humongous, p, o);
        if (o.size >= s.top - p) // ends the space (a humongous object passes its top)
          break;
        p += o.size;
        behind_->passed(p);
        continue;
      }
      const uint64_t next = resync(p + 8, limit);
      if (!warned) {
        warned = true;
        diags_.warn(
            hexAddress(p),
            ("no valid object in the " + s.kind + " space at " + hexAddress(s.bottom) +
             " (class word " + hexAddress(o.klass) + "); the walk " +
             (next < limit ? "resumed at " + hexAddress(next) : "skipped to " + hexAddress(limit)))
                .str());
      }
      ++resyncs_;
      walked = 0; // the objects after a resync are a run of their own
      p = next;
    }
  }

  /// The first address from `from` (8-aligned steps, below `limit`) that holds a valid object
  /// followed by another valid object or by `limit` itself; `limit` when there is none.
  uint64_t resync(uint64_t from, uint64_t limit) {
    for (uint64_t q = from; q < limit; q += 8) {
      Object o, next;
      if (!parser_.parse(q, limit, o))
        continue;
      if (q + o.size == limit || parser_.parse(q + o.size, limit, next))
        return q;
    }
    return limit;
  }

  void emit(const Space &s, bool humongous, uint64_t addr, const Object &o) {
    const KlassInfo &k = o.info;
    ++objects_;
    object_bytes_ += o.size;
    const bool filler = k.kind == KlassInfo::FillerArray || k.kind == KlassInfo::FillerObject;
    if (filler) {
      if (k.kind == KlassInfo::FillerArray) {
        ++filler_arrays_;
        filler_array_bytes_ += o.size;
      }
      ++stats_.free_count;
      stats_.free_bytes += o.size;
      return;
    }
    ++stats_.used_count;
    stats_.used_bytes += o.size;
    if (k.kind != KlassInfo::PrimitiveArray)
      return;
    ++arrays_;
    // One Allocation per element type, reused: its strings change only with the space.
    Allocation &a = arrays_by_type_[k.basic_type - kFirstPrimitive];
    if (!a.managed) {
      a.managed.emplace();
      a.managed->type_name = kPrimitives[k.basic_type - kFirstPrimitive].name;
      a.managed->element_size = 1u << k.log2_elem;
      a.state = AllocState::Used;
      a.noscan = true; // a primitive array's elements are no references
    }
    ManagedArray &m = *a.managed;
    a.address = a.chunk_address = addr;
    a.size = a.chunk_size = o.size;
    a.arena = s.bottom;
    a.data_offset = k.header;
    m.method_table = o.klass;
    m.length = o.length;
    m.large_object_heap = humongous;
    if (m.heap_kind != s.kind)
      m.heap_kind = s.kind.str();
    sink_(0, a); // one thread: lane 0
  }

  const AddressSpace &memory_;
  ObjectParser parser_;
  ReleaseBehind *behind_ = nullptr; // set while run() walks the spaces
  ObjectMarks marks_;
  const Jvm &jvm_;
  AllocationSink sink_;
  Diagnostics &diags_;
  std::array<Allocation, kLastPrimitive - kFirstPrimitive + 1> arrays_by_type_;
  HeapStats stats_;
  uint64_t objects_ = 0, object_bytes_ = 0, arrays_ = 0, resyncs_ = 0;
  uint64_t filler_arrays_ = 0, filler_array_bytes_ = 0;
};

/// Areas for the report: runs of neighbouring spaces of one kind (G1 regions merge).
std::vector<HeapArea> areasOf(const Jvm &jvm) {
  std::vector<HeapArea> areas;
  for (const Space &s : jvm.spaces) {
    if (!areas.empty() && areas.back().kind == s.kind &&
        areas.back().start + areas.back().size == s.bottom)
      areas.back().size += s.end - s.bottom;
    else
      areas.push_back({s.kind.str(), s.bottom, s.end - s.bottom, 0});
  }
  return areas;
}

/// The memory of the heap that holds no live object, for the holders pass (whose words are then
/// no references): free regions and to-space whole, the rest of each space above its top, and the
/// threads' TLABs past their top. Stale copies of moved objects lie there.
std::vector<HeapArea> unusedOf(const Jvm &jvm) {
  std::vector<HeapArea> unused;
  for (const Space &s : jvm.spaces) {
    if (s.kind == "free" || s.kind == "survivor-to")
      unused.push_back({s.kind.str(), s.bottom, s.end - s.bottom, 0});
    else if (s.walk && s.kind != "humongous" && s.end > s.top)
      unused.push_back({"above-top", s.top, s.end - s.top, 0});
  }
  for (const TlabGap &g : jvm.tlab_gaps)
    if (g.end > g.start)
      unused.push_back({"tlab-tail", g.start, g.end - g.start, 0});
  std::sort(unused.begin(), unused.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
  return unused;
}

/// The handles for the holders pass, and their facts. Only when a strong storage was found: a
/// JVM whose storages dumpsift could not read keeps every native word as a possible holder.
void handlesOf(const Jvm &jvm, HeapWalkResult &result) {
  uint64_t strong = 0, weak = 0, strong_handles = 0;
  for (const HandleStorage &s : jvm.storages) {
    (s.weak ? weak : strong) += 1;
    if (!s.weak)
      strong_handles += s.handles;
  }
  result.facts.push_back({"hotspot_handle_storages",
                          std::to_string(strong) + " strong, " + std::to_string(weak) + " weak"});
  result.facts.push_back({"hotspot_strong_handles", std::to_string(strong_handles)});
  if (strong == 0)
    return;
  result.held_through_handles = true;
  for (auto [start, end] : jvm.strong_handles)
    result.handles.push_back({"oop-handle", start, end - start, 0});
  for (auto [start, end] : jvm.java_stacks)
    result.stacks.push_back({"java-thread-stack", start, end - start, 0});
  std::sort(result.stacks.begin(), result.stacks.end(),
            [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; });
}

class HotSpotWalker final : public HeapWalker {
public:
  llvm::StringRef name() const override { return "hotspot"; }

  /// 64-bit little-endian processes (the LP64 layouts of vmStructs' entries) that map
  /// libjvm.so; object sizes say nothing of a request.
  const WalkerTraits &traits() const override {
    static const WalkerTraits traits{
        .platforms = Platforms::littleEndian64(),
        .modules = {std::begin(kLibjvmNames), std::end(kLibjvmNames)},
        .requests = nullptr,
        .thresholds = {},
        // Primitive arrays only, held by narrow oops.
        .listing = BlockListing::Partial,
        .framework_namespaces = {"java.", "javax.", "jdk.", "sun.", "com.sun."}};
    return traits;
  }

  bool detect(const AddressSpace &memory) const override {
    return findLibjvm(memory.snapshot()).has_value();
  }

  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                      Diagnostics &diags,
                                      const WalkOptions & /*one thread*/) const override {
    auto libjvm = findLibjvm(memory.snapshot());
    if (!libjvm)
      return createError("hotspot: no libjvm.so is mapped in this process");
    auto read = readJvm(memory, *libjvm, diags);
    if (!read)
      return read.takeError();
    auto jvm = std::make_shared<const Jvm>(std::move(*read));
    HeapWalkResult result;
    const ObjectLayout &l = jvm->layout;
    auto onOff = [](bool b) { return std::string(b ? "on" : "off"); };
    result.facts = {
        {"hotspot_gc", collectorName(jvm->gc).str()},
        {"hotspot_heap", hexAddress(jvm->reserved_start) + "-" + hexAddress(jvm->reserved_end)},
        {"hotspot_compressed_oops", onOff(l.compressed_oops)},
        {"hotspot_compressed_class_pointers", onOff(l.compressed_class_pointers)},
        {"hotspot_compact_headers", onOff(l.compact_headers)},
        {"hotspot_object_alignment", std::to_string(l.alignment)},
        {"hotspot_vmstructs", std::to_string(jvm->vm_fields) + " fields, " +
                                  std::to_string(jvm->vm_types) + " types, " +
                                  std::to_string(jvm->vm_constants) + " constants"},
        {"hotspot_spaces", std::to_string(jvm->spaces.size())},
        {"hotspot_threads", std::to_string(jvm->threads)},
        {"hotspot_tlabs", std::to_string(jvm->tlab_gaps.size())}};
    if (jvm->region_bytes)
      result.facts.push_back({"hotspot_region_bytes", std::to_string(jvm->region_bytes)});
    result.areas = areasOf(*jvm);
    result.bookkeeping = unusedOf(*jvm);
    handlesOf(*jvm, result);
    ObjectMarks marks = HeapWalk(memory, *jvm, sink, diags).run(result);
    // Objects hold each other by narrow references; stacks and native memory by full ones.
    if (l.compressed_oops)
      result.narrow_references = {l.narrow_oop_base, l.narrow_oop_shift};
    result.references_at_start = true;
    result.every_reference_seen = true;
    result.objects = makeJavaObjectFinder(memory, std::move(jvm), std::move(marks));
    return result;
  }
};

} // namespace

std::unique_ptr<HeapWalker> makeHotSpotWalker() {
  return std::make_unique<HotSpotWalker>();
}

} // namespace dumpsift
