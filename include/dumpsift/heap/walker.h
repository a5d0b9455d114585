// Heap walkers: one per allocator or runtime. Each finds its heaps in a snapshot (detect) and
// reports every allocation it knows (walk). All walkers are listed in one registry
// (src/heap/registry.cpp); adding an allocator is one file plus one line there.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

enum class AllocState : uint8_t { Used, Free, Unknown };
llvm::StringRef stateName(AllocState state); // "used", "free", "unknown"

/// Facts about a managed array object (CoreCLR/Mono), where the allocation is one.
struct ManagedArray {
  uint64_t method_table = 0; // MethodTable (CoreCLR) or vtable (Mono) address
  uint64_t length = 0;       // element count
  uint32_t element_size = 0;
  bool large_object_heap = false;
  std::string type_name; // "byte[]" where known, else empty
  /// Where the object lives, where known: "soh", "loh", "poh" (CoreCLR), "los" (Mono); else empty.
  std::string heap_kind;
};

/// One allocation as its allocator sees it. Compact: a walker may emit millions.
struct Allocation {
  uint64_t address = 0; // what malloc returned / the object's start (its MethodTable word)
  uint64_t size = 0;    // malloc_usable_size / the object's size
  uint64_t chunk_address =
      0; // the allocator's block start (glibc chunk header); == address if none
  uint64_t chunk_size = 0;
  uint64_t arena = 0; // owning arena/heap id (glibc: malloc_state address), 0 if none
  /// Offset from `address` where the payload (the bytes a program wrote) starts: 0 for malloc,
  /// 16 for a CoreCLR array, 32 for a Mono array.
  uint32_t data_offset = 0;
  AllocState state = AllocState::Unknown;
  bool mmapped = false;
  /// Set by a walker whose sizes are size classes (HeapWalkResult::size_classes) on the
  /// allocations whose size is whole pages instead: tcmalloc's large allocations and free spans.
  bool whole_pages = false;
  /// The object holds no pointers by its allocator's record (Go: a noscan span, where the
  /// backing arrays of []byte and of strings live) or its runtime's type (a managed array of
  /// primitives: HotSpot's, CoreCLR's by its MethodTable, Mono's by its element class).
  bool noscan = false;
  /// Size-class allocators: the allocation's size class, as the allocator numbers them (Go: the
  /// span's size class, 0 for a large object in a span of its own); -1 when it has none.
  int32_t size_class = -1;
  std::optional<ManagedArray> managed;
};

/// A piece of memory a walker understood: an arena's heap, an mmapped chunk run, a GC segment.
struct HeapArea {
  std::string kind; // "main-heap", "thread-heap", "mmapped", "loh", ...
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t arena = 0;
};

struct HeapStats {
  uint64_t used_count = 0, used_bytes = 0;
  uint64_t free_count = 0, free_bytes = 0;
  uint64_t unknown_count = 0, unknown_bytes = 0;
  void add(const Allocation &a);
  void add(const HeapStats &other); // the sums of both
};

/// An object of a managed heap that holds a word, as its walker finds and names it for the holders
/// pass (dumpsift/holders): the objects a walker does not list (BlockListing::Partial) are found
/// from the walk's own index of object starts.
struct HeldIn {
  uint64_t object = 0, size = 0; // the object's start (its header word) and size
  /// Its type, as the runtime's metadata names it ("RabbitMQ.Client.Impl.Channel",
  /// "System.Byte[][]"); "" when the walker cannot name it.
  std::string type;
  /// The field the word is ("_inputBuffer"), or the element of an array ("[3]"); "" when unknown.
  std::string field;
  /// False when the runtime's metadata says the word holds no reference: an int field, a
  /// primitive array's element, an object's header (its bits merely look like an address).
  bool reference = true;
  /// True when the word is a static field of `type` (HotSpot: in its class's mirror; CoreCLR:
  /// an element of its module's statics array): a root of the runtime, as a heap analyzer's
  /// "static" GC roots.
  bool is_static = false;
};

/// What a managed runtime's walker keeps of its heap for the holders pass: which of its objects
/// holds a word, and names for it. It reads the AddressSpace the walk read, which must outlive it;
/// calls are made from one thread at a time (it caches what it names).
class ObjectFinder {
public:
  virtual ~ObjectFinder() = default;
  /// The object of this heap that holds the word at `slot`, named where the walker can; nullopt
  /// when no object the walk found holds it.
  virtual std::optional<HeldIn> objectHolding(uint64_t slot) = 0;
  /// The static field of this runtime at `slot` where the runtime keeps statics in memory another
  /// allocator lists (Mono: each class's static area is a block of the C heap), named and marked
  /// is_static; nullopt when `slot` is no static the walker knows.
  virtual std::optional<HeldIn> staticHolding(uint64_t /*slot*/) { return std::nullopt; }
  /// At least as many as the objects eachObject gives (the walk counted them), for the holders
  /// pass to weigh against its budget before it asks; 0 when the finder cannot give them.
  virtual uint64_t objectCount() const { return 0; }
  /// Gives every live object the walk found, listed or not, in address order: its start, its
  /// size, and whether its words may hold references (false: a primitive array, an object of a
  /// class with no reference field). Free space is not given. The holders pass makes each a block
  /// of its graph, so that paths to roots run through the objects the walker does not list.
  virtual void eachObject(llvm::function_ref<void(uint64_t start, uint64_t size, bool references)>
                          /*each*/) {}
};

/// What one walker found in one snapshot.
struct HeapWalkResult {
  std::string walker; // registry name: "glibc", "coreclr", "mono" (set by walkHeaps)
  /// Walker-specific facts for the report (e.g. "glibc_layout": "2.35+"), as key/value strings.
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<HeapArea> areas; // sorted by start
  HeapStats stats;
  /// True when every allocation's size is one of the allocator's size classes (jemalloc,
  /// tcmalloc, mimalloc, musl, Go), except those marked whole_pages, so that a size group is a
  /// size class: the summary names it "jemalloc size class 163,840".
  bool size_classes = false;
  /// The allocator's own records where they lie outside its areas or inside blocks it lists
  /// (glibc: every malloc_state, the main arena's in libc's data among them, the heap_info
  /// headers, each tcache_perthread_struct): their words are bookkeeping, not references of the
  /// program, so the holders pass (dumpsift/holders) takes no holder and no root from them. A
  /// runtime's memory that holds no live object is given here too (HotSpot's free regions and
  /// to-space, where stale copies of moved objects lie). By start; `kind` names the record.
  std::vector<HeapArea> bookkeeping;
  /// Set by a runtime whose objects native memory holds only through handles (HotSpot: Java
  /// code and JNI keep an object from native memory only in an OopStorage slot; every other
  /// native word pointing into the Java heap is the VM's bookkeeping, such as a G1 region's
  /// bottom, which is its first object, or chance). Then a word outside this walker's areas
  /// and outside the threads' live stacks and registers is a reference to one of its blocks
  /// only when it lies in `handles`.
  bool held_through_handles = false;
  /// The handle slots in use (by start, not overlapping; `kind` names their storage).
  std::vector<HeapArea> handles;
  /// The stacks that may hold this runtime's objects (HotSpot: the Java threads'; the collector's
  /// threads hold heap addresses as bookkeeping. Go: its goroutines' live stacks, live_stacks;
  /// a thread's own stack runs the scheduler's frames only). A word of another thread's stack is
  /// no reference to its objects. Empty: all.
  std::vector<HeapArea> stacks;
  /// Set by a walker that can find (and name) the objects it does not list, for the holders pass.
  std::shared_ptr<ObjectFinder> objects;
  /// Set by a runtime whose objects hold each other by 32-bit words (HotSpot's compressed oops):
  /// inside this walker's areas a reference is a 32-bit word n other than 0, standing for the
  /// address base + (n << shift), and the holders pass reads the areas' words that way only.
  struct NarrowReferences {
    uint64_t base = 0;
    unsigned shift = 0;
  };
  std::optional<NarrowReferences> narrow_references;
  /// Set by a runtime whose references hold the address of an object's start and nothing else
  /// (HotSpot: a derived pointer into an object lives only beside its base): a word pointing
  /// inside one of this walker's blocks is then no reference to it, wherever the word lies.
  bool references_at_start = false;
  /// Stacks a runtime keeps in its own areas (Go's goroutines): the live part of each, from the
  /// stack pointer it saved up to its top, `arena` naming it (the goroutine's id). By start. The
  /// holders pass reads their words as stack roots.
  std::vector<HeapArea> live_stacks;
  /// The frames of live_stacks the walker could tell apart, by start, not overlapping: each
  /// function's part of a stack, [start, start + size), `kind` the function's name
  /// ("main.sleeper"), `arena` the goroutine's id. A word of one is a local of that function.
  std::vector<HeapArea> stack_frames;
  /// Set by a walker that lists every object of its areas this time although its listing is
  /// Partial (Go, when it read every goroutine's live stack): a word of its areas outside its
  /// blocks and outside live_stacks is then no reference (dead stack, free memory).
  bool every_object_listed = false;
  /// Set by a runtime none of whose references to its objects the pass misses (plain pointers,
  /// or narrow_references it decodes): a block nothing points at is then unreferenced, although
  /// the walker lists only some of its objects (HotSpot, CoreCLR).
  bool every_reference_seen = false;
};

/// Called once per allocation, with the lane of the thread that walked it: below
/// resolveThreads(WalkOptions::threads) (dumpsift/support/parallel.h), 0 for a walker that walks
/// on the calling thread. Within one heap area (HeapArea) the calls come from one thread, in
/// address order. With WalkOptions::threads other than 1 a walker may walk several areas at once
/// and call the sink from several threads concurrently, never two at once with the same lane: the
/// sink gathers what each lane gives apart (no locks needed), and must not depend on the order of
/// calls across areas (gather per lane, then sort by address: the areas of one walker never
/// overlap).
using AllocationSink = llvm::function_ref<void(unsigned lane, const Allocation &)>;

/// The request sizes a block may have served: from `lo` to `hi` bytes.
struct RequestRange {
  uint64_t lo = 0, hi = 0;
  bool contains(uint64_t n) const { return lo <= n && n <= hi; }
  bool exact() const { return lo == hi; }
};

/// The processes a walker reads: walkHeaps runs it on no other (see walkHeaps). An empty list
/// admits every value.
struct Platforms {
  /// Operating systems. A dump that names none (Os::Unknown) passes.
  std::vector<Os> os;
  /// Architectures, as SystemInfo::arch spells them. A dump that names none (empty) passes.
  std::vector<std::string> arch;
  /// Pointer sizes, in bytes.
  std::vector<unsigned> pointer_sizes;
  /// Byte orders of the process's words.
  std::vector<llvm::support::endianness> byte_orders;

  /// What most walkers read: processes of 64-bit little-endian words, of the operating systems
  /// `os` and the architectures `arch` (each: any when empty).
  static Platforms littleEndian64(std::vector<Os> os = {}, std::vector<std::string> arch = {}) {
    return {.os = std::move(os),
            .arch = std::move(arch),
            .pointer_sizes = {8},
            .byte_orders = {llvm::support::little}};
  }

  /// True when the process's operating system is one of `os`.
  bool readsOs(Os process_os) const;
  /// True when the process's words are of a shape the walker reads: its architecture, pointer
  /// size and byte order.
  bool readsWords(const SystemInfo &system) const;
  /// True when both are.
  bool reads(const SystemInfo &system) const { return readsOs(system.os) && readsWords(system); }
  /// The word shapes it reads in words: "64-bit little-endian x86_64", "32-bit or 64-bit
  /// little-endian".
  std::string wordsText() const;
};

/// A size at which an allocator starts to serve a request another way, and what that means for
/// the blocks just over it (the size-class finding, docs/findings.md, prints it).
struct SizeThreshold {
  uint64_t bytes = 0;
  /// True for the blocks it concerns (glibc's mmap threshold: mmapped chunks; .NET's large
  /// object threshold: managed arrays).
  bool (*concerns)(const Allocation &block) = nullptr;
  /// Whether it is compared with the block's own size (an object's size) or with the requests
  /// the block may have served (WalkerTraits::requests).
  bool measures_block = false;
  /// What a group of such blocks just over it means, in words, for one of them: "just over
  /// glibc's 128 KiB mmap threshold, so each is its own mmap of 135,168 bytes, unmapped again on
  /// free".
  std::string (*meaning)(const Allocation &block) = nullptr;
};

/// What a walker's list of allocations says of its heaps, for the holders pass
/// (dumpsift/holders/holders.h), which decides from it which memory can hold references.
enum class BlockListing : uint8_t {
  /// It lists every block of its heaps, used and free, and the program refers to them with
  /// native pointers (interior ones too): memory of its areas outside the blocks it lists is its
  /// own (headers, free lists, records) and holds no reference of the program, and a block no root
  /// reaches is garbage to it.
  EveryBlock,
  /// It lists some of the objects in its heaps only (managed arrays), or its heaps hold
  /// references the pass does not read (narrow oops, goroutine stacks): a word of its areas
  /// outside the blocks it lists may be a reference from an object it does not list, and whether
  /// its objects are reachable is not for the pass to say.
  Partial,
};

/// What a walker reads and knows, stated once by the walker (HeapWalker::traits): walkHeaps reads
/// the platforms and module names, the analysis's findings the rest. Nothing outside the heap
/// layer names a walker to learn these.
struct WalkerTraits {
  Platforms platforms;
  /// The file names of the modules that hold its allocator or runtime: a process that maps one
  /// uses it (detect looks for them with Snapshot::findModule, where that is how it finds its
  /// heaps). On a process whose words it does not read, walkHeaps gives a warning when the
  /// process maps one. Empty for a walker whose allocator has no module of its own (Go's runtime
  /// and musl's malloc are linked into the executable).
  std::vector<ModuleName> modules;
  /// How a requested size maps to the block it gets: the requests a block may have served.
  /// nullptr when the walker says nothing of its rounding (size classes, object sizes): then a
  /// block's size is all that is known of its request.
  RequestRange (*requests)(const Allocation &block) = nullptr;
  /// The sizes at which it serves requests another way, in the order a finding names them.
  std::vector<SizeThreshold> thresholds;
  /// What its list of allocations covers (BlockListing).
  BlockListing listing = BlockListing::EveryBlock;
  /// The namespaces of its runtime's own library ("java.", "System."): a group's summary names the
  /// first object on its buffers' paths whose type lies outside them, as the program's owner of
  /// the buffers (an ArrayList's array is the framework's; the Channel holding the list is not).
  std::vector<llvm::StringRef> framework_namespaces = {};
  /// It reads the native heap of the operating systems it reads, the one HeapAlloc and the C
  /// runtime's malloc draw on (the NT heap on Windows): where no such walker walked a heap on
  /// Windows, the analysis says the region scan stood in for it.
  bool native_heap = false;
};

/// How to walk.
struct WalkOptions {
  /// Threads to walk on: 0 for one per core. A walker that walks its areas in parallel (glibc)
  /// takes them in address order from a shared counter, so the dump is read front to back; the
  /// others walk on the calling thread whatever this says. The result (areas, stats, facts,
  /// warnings and their order) is the same for every thread count.
  unsigned threads = 1;
  /// Called now and then (about ten times a second) on the thread that called walk while other
  /// threads walk, so that it can show progress; never called concurrently with itself.
  llvm::function_ref<void()> waiting = nothingToShow;

private:
  static void nothingToShow() {}
};

class HeapWalker {
public:
  virtual ~HeapWalker() = default;
  /// Stable registry name, used in the report and by `--walker`.
  virtual llvm::StringRef name() const = 0;
  /// What it reads and knows (WalkerTraits): the same object for the life of the program.
  virtual const WalkerTraits &traits() const = 0;
  /// Cheap test: does this process hold heaps of this kind? Never fails. Asked only about
  /// processes its platforms include (walkHeaps checks them first).
  virtual bool detect(const AddressSpace &memory) const = 0;
  /// Reports every allocation found to `sink` (see AllocationSink for the order, and for calls
  /// from several threads). Damage local to one heap (bad size, loop, chunk past its heap) is a
  /// warning in `diags` and the walk goes on with the next heap; an Error is returned only when
  /// nothing can be walked at all. Called only on processes its platforms include. The result's
  /// `walker` is left for walkHeaps to set.
  virtual llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory, AllocationSink sink,
                                              Diagnostics &diags,
                                              const WalkOptions &options) const = 0;
  /// The walk on the calling thread only (WalkOptions' defaults): `each` is given every
  /// allocation, in the walker's order.
  llvm::Expected<HeapWalkResult> walk(const AddressSpace &memory,
                                      llvm::function_ref<void(const Allocation &)> each,
                                      Diagnostics &diags) const {
    return walk(
        memory, [&](unsigned /*lane: one thread*/, const Allocation &a) { each(a); }, diags,
        WalkOptions{});
  }
};

/// Every known walker, in a fixed order.
const std::vector<std::unique_ptr<HeapWalker>> &heapWalkers();

/// The registered walker named `name`, or nullptr.
const HeapWalker *findHeapWalker(llvm::StringRef name);

} // namespace dumpsift
