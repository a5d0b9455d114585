// Who holds each buffer (docs/holders.md). One pass over the dump's captured writable memory
// finds every word that points into a block the walkers list; each such reference is classed by
// where it lies: inside a listed block (a heap holder), on a thread's live stack, in a register,
// in a module's data (a global) or in other writable memory. The references between blocks make
// a graph; from the roots it tells every reported buffer's verdict (anchored, heap-only,
// unreferenced, free) and one shortest path from a root. Holder blocks whose first word is a C++
// vtable are named by their class (Itanium RTTI, else a _ZTV symbol), globals by their symbol.
//
// The analysis feeds the directory while the walkers walk (BlockDirectoryBuilder), then asks for
// the holders of its buffers (findHolders) and summarises them per size group (summarizeHolders).
// Cost: one read of the captured writable memory at memory speed, split over threads; memory
// bounded by a budget of blocks and references (HoldersOptions::budget), past which the pass says
// it did less (direct holders only, or no heap holder named) instead of growing.
#pragma once

#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/StringSaver.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// How far the holders pass goes (`--holders`).
enum class HoldersMode : uint8_t {
  None,   // no pass
  Direct, // the references into the reported buffers only: who points at each, no reachability
  Chains, // every reference between listed blocks: holders, verdicts and a path to a root
};
llvm::StringRef holdersModeName(HoldersMode mode); // "none", "direct", "chains"
/// The mode named `name`, or nullopt.
std::optional<HoldersMode> parseHoldersMode(llvm::StringRef name);

/// Where a reference lies.
enum class HolderKind : uint8_t {
  Heap,     // inside a block a walker lists (or, in a heap whose walker lists some objects only,
            // inside an object it does not list)
  Stack,    // on a thread's stack at or above its stack pointer
  Register, // in a thread's register
  Global,   // in a module's writable data (.data, .bss)
  Other,    // in other captured writable memory (memory no walker claims, thread-local blocks)
};
llvm::StringRef holderKindName(HolderKind kind); // "heap", "stack", "register", "global", "other"

/// What keeps a buffer alive, as far as the dump shows.
enum class Verdict : uint8_t {
  Anchored,     // reachable from a stack, register, global or other root
  HeapOnly,     // referenced, but only from blocks no root reaches
  Unreferenced, // nothing points at it: leaked, or garbage not yet collected
  Free,         // it lies in a free block
  Unknown,      // not decided: reachability not computed (direct, over budget), or it may be
                // held through objects a walker does not list (BlockListing::Partial)
};
/// "anchored", "heap-only", "unreferenced", "free", "unknown".
llvm::StringRef verdictName(Verdict verdict);

/// Blocks the directory keeps and references the graph keeps, each, by default: 4,194,304 (about
/// 17 bytes per block and 12 per reference at most).
inline constexpr uint64_t kDefaultHolderBudget = uint64_t(1) << 22;
/// Holders a buffer lists (the rest are counted).
inline constexpr size_t kHoldersShown = 8;
/// Steps of a path to a root that are listed (the rest are counted).
inline constexpr size_t kPathStepsShown = 16;

/// The blocks the walkers list, gathered while they walk: every block that is not free (each may
/// hold references and be held). Each walking thread adds to its own lane; nothing is shared but a
/// counter checked now and then against the budget, past which the builder keeps nothing more.
class BlockDirectoryBuilder {
public:
  /// `lanes`: the walk's lanes (resolveThreads of its threads); `budget`: the most blocks kept.
  BlockDirectoryBuilder(unsigned lanes, uint64_t budget);
  BlockDirectoryBuilder(BlockDirectoryBuilder &&) noexcept;
  BlockDirectoryBuilder &operator=(BlockDirectoryBuilder &&) noexcept;
  ~BlockDirectoryBuilder();

  /// Takes block `a` that walker result `heap` lists, from the thread walking in `lane` (calls
  /// with the same lane never overlap). Free blocks are not taken.
  void add(unsigned lane, uint16_t heap, const Allocation &a);
  /// True once more blocks than the budget were offered: the directory then holds none.
  bool overBudget() const;

  struct Entry {
    uint64_t start = 0, end = 0;
    uint16_t heap = 0;
    bool noscan = false;
    bool from_finder = false; // given by the walker's ObjectFinder, not listed by its walk
  };
  /// Every lane's blocks, each lane in the order added; empty when over budget. For findHolders.
  std::vector<std::vector<Entry>> takeLanes();

private:
  struct alignas(64) Lane {
    std::vector<Entry> entries;
    uint64_t unreported = 0; // added since the last update of the shared count
  };
  std::vector<Lane> lanes_;
  uint64_t budget_ = 0;
  std::unique_ptr<std::atomic<uint64_t>> offered_; // blocks offered, updated in steps
  std::unique_ptr<std::atomic<bool>> over_;
};

/// A buffer whose holders are wanted: the block [address, address + size).
struct HolderTarget {
  uint64_t address = 0;
  uint64_t size = 0;
  AllocState state = AllocState::Unknown;
  /// Index of the walker result that lists it, or kNoHeap for the region scan's buffers.
  uint16_t heap = 0;
  /// Bytes of the block known to hold no reference of the process, [opaque_start, opaque_start +
  /// opaque_length) (a format's data, zeros checked in full: SniffResult::referenceFreeLength;
  /// the whole block when its allocator says it holds none, Allocation::noscan): the pass does
  /// not read them.
  uint64_t opaque_start = 0, opaque_length = 0;
  static constexpr uint16_t kNoHeap = 0xffff;
};

/// One place that holds a reference into a block.
struct Holder {
  HolderKind kind = HolderKind::Other;
  /// The address of the word that holds the reference (0 for a register).
  uint64_t slot = 0;
  /// The reference: an address inside the held block.
  uint64_t points_to = 0;
  /// Heap: the block holding it and where the word lies in it (slot - block). block_size 0: an
  /// object its walker does not list (BlockListing::Partial).
  uint64_t block = 0, block_size = 0;
  llvm::StringRef walker; // Heap: the walker whose heap holds it
  /// Heap: the block's type, "" when none is known: its C++ class from its vtable, or the managed
  /// type its runtime's walker names (HeapWalkResult::objects).
  llvm::StringRef class_name;
  /// Heap: the field of that managed type the word is ("_inputBuffer"), or an array's element
  /// ("[3]"); "" when not known.
  llvm::StringRef field;
  /// Stack, Register: the thread (its id as the dump gives it).
  uint64_t thread = 0;
  /// Stack: the goroutine whose stack it is (its id), 0 for a thread's stack
  /// (HeapWalkResult::live_stacks).
  uint64_t goroutine = 0;
  /// Stack: the function whose frame holds the word, where the walker told the stack's frames
  /// apart (HeapWalkResult::stack_frames: "main.sleeper"); "" when unknown.
  llvm::StringRef function;
  llvm::StringRef register_name; // Register
  /// Global: the module's file name and the symbol that holds the word (demangled; "" when none
  /// is known: then symbol_offset is from the module's start).
  llvm::StringRef module;
  llvm::StringRef symbol;
  uint64_t symbol_offset = 0;
  /// Other, Global: the kind of runtime handle whose slot the word is ("gc-handle",
  /// "oop-handle": HeapWalkResult::handles), with `walker` the runtime's; "" when none.
  llvm::StringRef handle;
  /// Heap: the word is a static field, `class_name` its class (HeldIn::is_static): the root a
  /// group's summary names ("anchored from static `Holders.channel`").
  bool is_static = false;

  uint64_t offset() const { return slot - block; }
};

/// What the pass found for one buffer.
struct BufferHolders {
  /// The first kHoldersShown references: roots first (globals, stacks, registers, other), then
  /// heap holders, each kind by address.
  std::vector<Holder> holders;
  uint64_t references = 0; // every reference found (holders lists the first ones)
  Verdict verdict = Verdict::Unknown;
  /// Anchored: the kind of root its path starts at.
  HolderKind anchor = HolderKind::Other;
  /// Anchored: one shortest path, from the holder of the buffer up to the root, each step the
  /// holder of the step before (the last is the root); the first kPathStepsShown steps.
  std::vector<Holder> path;
  uint64_t path_steps = 0;   // steps of the whole path (> path.size() when cut)
  bool path_complete = true; // false when more steps than the pass follows (path_steps is a floor)
};

/// What the pass did, for the report.
struct HoldersRun {
  HoldersMode requested = HoldersMode::None;
  HoldersMode ran = HoldersMode::None;
  bool reachability = false;       // verdicts other than free and unknown could be decided
  bool heap_holders_named = false; // the directory of every block was kept (within the budget)
  std::string limited;             // why it ran less than requested ("" when it did not)
  uint64_t blocks = 0;             // blocks in the directory
  uint64_t references = 0;         // references between blocks kept in the graph
  uint64_t scanned_bytes = 0;      // captured writable memory read
  uint64_t opaque_bytes = 0;       // captured writable memory not read: the targets' opaque bytes
  std::array<uint64_t, 5> roots{}; // references from roots into blocks, by HolderKind
  /// The module files read for names: "PATH" (its build ID checked) or "PATH (named, build ID not
  /// in the dump)"; and the modules whose names were wanted but whose file was not usable:
  /// "PATH: why".
  std::vector<std::string> module_files;
  std::vector<std::string> modules_unread;
};

/// Every buffer's holders (one per target, in the order of the targets) and what the pass did.
struct Holders {
  HoldersRun run;
  std::vector<BufferHolders> buffers;
  /// Owns the strings the holders point at (class, module, symbol and walker names).
  std::unique_ptr<llvm::BumpPtrAllocator> string_memory;
  std::unique_ptr<llvm::UniqueStringSaver> strings;
};

struct HoldersOptions {
  HoldersMode mode = HoldersMode::Chains;
  unsigned threads = 1; // 0: one per core
  uint64_t budget = kDefaultHolderBudget;
  /// Directories searched for module files before the paths the dump records (--module-path).
  std::vector<std::string> module_paths;
  /// Read module files for names (else names come from the dump's bytes only: --no-module-files).
  bool module_files = true;
};

/// Finds the holders of `targets` (sorted by address, not overlapping) in `memory`: the blocks
/// `heaps`' walkers listed, gathered by `directory`, are the nodes. Scans every captured writable
/// memory range once on options.threads threads, split by range and merged in address order (the
/// result does not depend on the thread count). The walkers' bookkeeping
/// (HeapWalkResult::bookkeeping), memory of an EveryBlock walker's areas outside its blocks,
/// a Go noscan block's words and a thread's stack below its stack pointer hold no references. A
/// budget that runs out, a mode of none, or no targets: the run says what was left out, with a
/// warning in `diags` for a budget. Never fails. Progress: "indexing blocks for holders", then
/// "finding holders" in bytes scanned.
Holders findHolders(
    const AddressSpace &memory, llvm::ArrayRef<HeapWalkResult> heaps,
    BlockDirectoryBuilder directory, llvm::ArrayRef<HolderTarget> targets,
    const HoldersOptions &options, Diagnostics &diags,
    ProgressFn progress = [](llvm::StringRef, uint64_t, uint64_t) {});

/// The holders of a group of buffers summarised: what holds most of them (the commonest shape of
/// holder among the members' first holders: its kind, and its class, symbol or thread, and the
/// offset when the same for all), their verdicts, and the commonest root their paths start at.
struct GroupHolders {
  uint64_t members = 0;
  uint64_t held_alike = 0;      // members whose first holder has this shape
  std::optional<Holder> holder; // the shape (its addresses those of the first such member)
  bool same_offset = true;      // every such member is held at the same offset of its holder
  std::vector<std::pair<Verdict, uint64_t>> verdicts; // count per verdict, most first
  std::optional<Holder> root; // the commonest root among the anchored members' paths
  uint64_t rooted_alike = 0;  // anchored members whose path starts at that root's shape
  /// The commonest owner among the members' paths, when it is not the holder: the first step of
  /// a path in an object whose type lies outside its runtime's framework
  /// (WalkerTraits::framework_namespaces), as MAT's immediate dominators skip java.*.
  std::optional<Holder> owner;
  uint64_t owned_alike = 0; // members whose path has that owner's shape
};

/// The root of `b`'s path as a reader names it (its path must not be empty): the static field
/// nearest the buffer on it (Holder::is_static: a runtime's statics are its roots, whatever
/// handle or table keeps them), else the path's last step.
const Holder &pathRoot(const BufferHolders &b);

/// Summarises `holders.buffers[i]` for every i in `members`.
GroupHolders summarizeHolders(const Holders &holders, llvm::ArrayRef<size_t> members);

} // namespace dumpsift
