// walkHeaps: the registered walkers over one process, each checked against its platforms first.
#include "dumpsift/heap/walk.h"

#include "dumpsift/support/parallel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

namespace dumpsift {

namespace {

/// Why `walker` does not read this process, whose words its traits' platforms exclude, when the
/// process maps a module it recognises; nullopt when it maps none (nothing to say).
std::optional<std::string> refusal(const HeapWalker &walker, const Snapshot &snapshot) {
  const WalkerTraits &traits = walker.traits();
  std::optional<llvm::StringRef> module = snapshot.findModule(traits.modules);
  if (!module)
    return std::nullopt;
  const SystemInfo &system = snapshot.system;
  return walker.name().str() + " heap walker supports " + traits.platforms.wordsText() +
         " processes only (this one is " + std::to_string(system.pointer_size * 8) + "-bit " +
         (system.little_endian ? "little-endian" : "big-endian") + ", " + system.arch + ")";
}

/// The words of a warning about a walker that found nothing although the process maps `module`,
/// a module of its allocator or runtime: what it did (`outcome`) and what that leaves unexamined.
std::string foundNothing(const HeapWalker &walker, llvm::StringRef module,
                         llvm::StringRef outcome) {
  return fileName(module).str() + " is loaded, the " + walker.name().str() +
         " walker's allocator or runtime, but " + outcome.str() +
         ": its heap was not walked (not captured in this dump, or a build or layout the walker "
         "does not read); the region scan covered what the dump holds of it";
}

} // namespace

uint64_t walkableBytes(const AddressSpace &memory) {
  uint64_t total = 0;
  for (const MemoryRange &m : memory.snapshot().memory) {
    const Region *region = memory.regionContaining(m.start);
    if (region && (region->cls == RegionClass::Heap || region->cls == RegionClass::Anonymous))
      total += m.bytes.size();
  }
  return total;
}

std::vector<HeapWalkResult> walkHeaps(const AddressSpace &memory,
                                      const std::vector<std::string> &only, HeapVisitor visit,
                                      Diagnostics &diags, ProgressFn progress, unsigned threads) {
  std::vector<HeapWalkResult> results;
  const Snapshot &snapshot = memory.snapshot();
  const uint64_t walkable = walkableBytes(memory);
  memory.adviseAccess(AddressSpace::Access::Random); // headers here and there, no readahead
  auto normal = llvm::make_scope_exit([&] { memory.adviseAccess(AddressSpace::Access::Normal); });
  const std::thread::id driver = std::this_thread::get_id();
  // What each lane walked, for progress: written by its thread only, read by the driver's.
  struct alignas(64) LaneProgress {
    std::atomic<uint64_t> bytes{0};
    uint64_t allocations = 0;
  };
  std::vector<LaneProgress> lanes(resolveThreads(threads));
  for (const std::unique_ptr<HeapWalker> &walker : heapWalkers()) {
    const bool asked = llvm::is_contained(only, walker->name());
    if (!only.empty() && !asked)
      continue;
    // A walker asked for by name that does not run says why; one that finds none of its heaps, or
    // whose walk fails, where its module is loaded says so too (below). A walk that succeeds with
    // nothing says nothing: libc.so.6 is loaded where another allocator replaced malloc.
    auto notApplied = [&](llvm::StringRef why) {
      if (asked)
        diags.warn(walker->name().str(), "asked for (--walker " + walker->name().str() +
                                             ") but did not apply: " + why.str());
    };
    const std::optional<llvm::StringRef> module = snapshot.findModule(walker->traits().modules);
    const Platforms &platforms = walker->traits().platforms;
    if (!platforms.readsOs(snapshot.system.os)) {
      notApplied("it reads no " + osName(snapshot.system.os).str() + " process");
      continue;
    }
    if (!platforms.readsWords(snapshot.system)) {
      if (std::optional<std::string> why = refusal(*walker, snapshot))
        diags.warn(walker->name().str(), *why);
      else
        notApplied("it reads " + platforms.wordsText() + " processes only");
      continue;
    }
    if (!walker->detect(memory)) {
      if (module)
        diags.warn(walker->name().str(),
                   foundNothing(*walker, *module, "the walker found none of its heaps"));
      else
        notApplied("it found none of its heaps in this process");
      continue;
    }
    const std::string phase = ("walking " + walker->name() + " heaps").str();
    progress(phase, 0, walkable);
    const auto index = static_cast<uint16_t>(results.size());
    for (LaneProgress &l : lanes)
      l.bytes.store(0, std::memory_order_relaxed);
    auto show = [&] {
      uint64_t bytes = 0;
      for (const LaneProgress &l : lanes)
        bytes += l.bytes.load(std::memory_order_relaxed);
      progress(phase, std::min(bytes, walkable), walkable);
    };
    WalkOptions walk_options;
    walk_options.threads = threads;
    walk_options.waiting = show;
    auto result = walker->walk(
        memory,
        [&](unsigned lane, const Allocation &a) {
          LaneProgress &l = lanes[lane];
          l.bytes.store(l.bytes.load(std::memory_order_relaxed) + a.chunk_size,
                        std::memory_order_relaxed);
          // Progress is rate-limited, but cheap calls stay cheaper.
          if ((++l.allocations & 0x3fff) == 0 && std::this_thread::get_id() == driver)
            show();
          visit(lane, index, a);
        },
        diags, walk_options);
    memory.releasePages(0, UINT64_MAX); // what the walk read stays in the page cache only
    if (!result) {
      const std::string why = llvm::toString(result.takeError());
      diags.warn(walker->name().str(),
                 module ? foundNothing(*walker, *module, "the walk found nothing (" + why + ")")
                        : why);
      continue;
    }
    result->walker = walker->name().str();
    results.push_back(std::move(*result));
  }
  return results;
}

} // namespace dumpsift
