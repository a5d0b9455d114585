// The directory of blocks: gathered by lane while the walkers walk, merged by address, and the
// page filter in front of its lookups.
#include "directory.h"

#include <algorithm>

namespace dumpsift {

namespace {

/// Blocks a lane adds between two updates of the shared count: the count is touched once per
/// this many blocks, so that walking threads do not contend for it.
constexpr uint64_t kCountStep = 4096;
/// Runs of blocks in order that the directory merges; with more, it sorts them.
constexpr size_t kMostRunsMerged = 64;

} // namespace

BlockDirectoryBuilder::BlockDirectoryBuilder(unsigned lanes, uint64_t budget)
    : lanes_(std::max(1u, lanes)), budget_(budget),
      offered_(std::make_unique<std::atomic<uint64_t>>(0)),
      over_(std::make_unique<std::atomic<bool>>(false)) {}

BlockDirectoryBuilder::BlockDirectoryBuilder(BlockDirectoryBuilder &&) noexcept = default;
BlockDirectoryBuilder &
BlockDirectoryBuilder::operator=(BlockDirectoryBuilder &&) noexcept = default;
BlockDirectoryBuilder::~BlockDirectoryBuilder() = default;

void BlockDirectoryBuilder::add(unsigned lane, uint16_t heap, const Allocation &a) {
  if (a.state == AllocState::Free || a.size == 0 || a.address + a.size < a.address)
    return;
  Lane &l = lanes_[lane];
  if (over_->load(std::memory_order_relaxed))
    return;
  if (++l.unreported == kCountStep) {
    l.unreported = 0;
    if (offered_->fetch_add(kCountStep, std::memory_order_relaxed) + kCountStep > budget_) {
      over_->store(true, std::memory_order_relaxed);
      return;
    }
  }
  // A lane alone past the budget need not wait for the shared count.
  if (l.entries.size() >= budget_) {
    over_->store(true, std::memory_order_relaxed);
    return;
  }
  l.entries.push_back({a.address, a.address + a.size, heap, a.noscan});
}

bool BlockDirectoryBuilder::overBudget() const {
  if (over_->load(std::memory_order_relaxed))
    return true;
  uint64_t total = 0;
  for (const Lane &l : lanes_)
    total += l.entries.size();
  return total > budget_;
}

std::vector<std::vector<BlockDirectoryBuilder::Entry>> BlockDirectoryBuilder::takeLanes() {
  std::vector<std::vector<Entry>> out;
  const bool over = overBudget();
  for (Lane &l : lanes_) {
    if (!over)
      out.push_back(std::move(l.entries));
    l.entries = {};
  }
  return out;
}

namespace holders {

std::vector<bool> addFinderObjects(Lanes &lanes, llvm::ArrayRef<HeapWalkResult> heaps,
                                   uint64_t budget) {
  std::vector<bool> added(heaps.size(), false);
  std::vector<uint64_t> listed(heaps.size(), 0);
  uint64_t total = 0;
  for (const auto &lane : lanes)
    for (const BlockDirectoryBuilder::Entry &e : lane) {
      ++total;
      if (e.heap < listed.size())
        ++listed[e.heap];
    }
  for (size_t h = 0; h < heaps.size(); ++h) {
    ObjectFinder *finder = heaps[h].objects.get();
    const uint64_t objects = finder ? finder->objectCount() : 0;
    // Its listed blocks are among its objects: they are given again, then merged.
    if (objects == 0 || total - listed[h] + objects > budget)
      continue;
    std::vector<BlockDirectoryBuilder::Entry> &lane = lanes.emplace_back();
    lane.reserve(objects);
    const uint16_t heap = static_cast<uint16_t>(h);
    finder->eachObject([&](uint64_t start, uint64_t size, bool references) {
      if (size && start + size > start && lane.size() < objects)
        lane.push_back({start, start + size, heap, !references, true});
    });
    total = total - listed[h] + lane.size();
    added[h] = true;
  }
  return added;
}

std::vector<bool> partialHeaps(llvm::ArrayRef<HeapWalkResult> heaps,
                               const std::vector<bool> &completed) {
  std::vector<bool> partial(heaps.size(), false);
  for (size_t h = 0; h < heaps.size(); ++h)
    if (const HeapWalker *w = findHeapWalker(heaps[h].walker))
      partial[h] = w->traits().listing == BlockListing::Partial &&
                   !(h < completed.size() && completed[h]) && !heaps[h].every_object_listed;
  return partial;
}

Directory buildDirectory(Lanes lanes, const std::vector<bool> &partial,
                         llvm::ArrayRef<HolderTarget> targets,
                         std::vector<uint32_t> &target_entries, uint64_t &dropped) {
  using Entry = BlockDirectoryBuilder::Entry;
  std::vector<Entry> all;
  size_t total = 0;
  for (const auto &lane : lanes)
    total += lane.size();
  all.reserve(total);
  for (auto &lane : lanes) {
    all.insert(all.end(), lane.begin(), lane.end());
    lane = {};
  }
  lanes.clear();
  // By start, then the longer first (a walker that lists a block twice keeps one), then by heap,
  // then the finder's before the walk's: the same order whatever lane walked what. A walk in
  // address order needs no sort.
  auto before = [](const Entry &a, const Entry &b) {
    if (a.start != b.start)
      return a.start < b.start;
    if (a.end != b.end)
      return a.end > b.end;
    if (a.heap != b.heap)
      return a.heap < b.heap;
    return a.from_finder > b.from_finder;
  };
  // The blocks come in a few runs in order (a walker's, a walking thread's, a finder's): the runs
  // are merged pairwise, linear in the blocks per level of merging; many runs are sorted.
  std::vector<size_t> run_ends;
  for (size_t i = 1; i <= all.size(); ++i)
    if (i == all.size() || before(all[i], all[i - 1]))
      run_ends.push_back(i);
  if (run_ends.size() > kMostRunsMerged) {
    std::sort(all.begin(), all.end(), before);
  } else {
    while (run_ends.size() > 1) {
      std::vector<size_t> merged;
      for (size_t r = 0; r < run_ends.size(); r += 2) {
        const size_t begin = r ? run_ends[r - 1] : 0;
        if (r + 1 < run_ends.size())
          std::inplace_merge(all.begin() + begin, all.begin() + run_ends[r],
                             all.begin() + run_ends[r + 1], before);
        merged.push_back(run_ends[std::min(r + 1, run_ends.size() - 1)]);
      }
      run_ends = std::move(merged);
    }
  }
  // A block listed by the walk and given by its finder too: the finder's entry stays.
  auto same = [](const Entry &a, const Entry &b) {
    return a.start == b.start && a.end == b.end && a.heap == b.heap && a.from_finder;
  };
  all.erase(std::unique(all.begin(), all.end(), same), all.end());

  // Each target that is a listed block (not free, the same start) marks it; any other target is
  // an entry of its own. Entries by start, a target's before a block's of the same start.
  struct Item {
    uint64_t start, end;
    uint8_t flags;
    uint32_t target; // kNoEntry for a block that is no target
    uint16_t heap;
  };
  std::vector<uint32_t> target_of_block(all.size(), kNoEntry);
  std::vector<Item> lone_targets;
  for (size_t t = 0; t < targets.size(); ++t) {
    const HolderTarget &target = targets[t];
    auto it = std::lower_bound(all.begin(), all.end(), target.address,
                               [](const Entry &e, uint64_t a) { return e.start < a; });
    if (target.state != AllocState::Free && it != all.end() && it->start == target.address &&
        target_of_block[it - all.begin()] == kNoEntry) {
      target_of_block[it - all.begin()] = static_cast<uint32_t>(t);
      continue;
    }
    uint8_t flags = kTarget;
    if (target.heap < partial.size() && partial[target.heap])
      flags |= kPartial;
    if (target.heap != HolderTarget::kNoHeap)
      flags |= kListed;
    if (target.state == AllocState::Free)
      flags |= kFree;
    lone_targets.push_back({target.address, target.address + std::max<uint64_t>(target.size, 1),
                            flags, static_cast<uint32_t>(t), target.heap});
  }

  // Entries by start, a lone target before a block of the same start. A block that overlaps the
  // entry before it is dropped (a walker listed it twice, or two walkers claim the same memory);
  // a target is kept whatever it overlaps.
  Directory d;
  const size_t most = all.size() + lone_targets.size();
  d.starts.reserve(most);
  d.ends.reserve(most);
  d.flags.reserve(most);
  d.heaps.reserve(most);
  target_entries.assign(targets.size(), kNoEntry);
  dropped = 0;
  uint64_t highest = 0;
  auto append = [&](const Item &item) {
    if (item.target == kNoEntry && !d.starts.empty() && item.start < d.ends.back()) {
      ++dropped;
      return;
    }
    if (item.target != kNoEntry)
      target_entries[item.target] = static_cast<uint32_t>(d.size());
    d.starts.push_back(item.start);
    d.ends.push_back(item.end);
    d.flags.push_back(item.flags);
    d.heaps.push_back(item.heap);
    highest = std::max(highest, item.end);
  };
  size_t lone = 0;
  for (size_t i = 0; i <= all.size(); ++i) {
    for (; lone < lone_targets.size() &&
           (i == all.size() || lone_targets[lone].start <= all[i].start);
         ++lone)
      append(lone_targets[lone]);
    if (i == all.size())
      break;
    const Entry &e = all[i];
    uint8_t flags = kListed | (e.noscan ? kNoscan : kHolds);
    if (e.heap < partial.size() && partial[e.heap])
      flags |= kPartial;
    if (target_of_block[i] != kNoEntry)
      flags |= kTarget;
    append({e.start, e.end, flags, target_of_block[i], e.heap});
  }
  d.setHighest(highest);
  return d;
}

Directory targetDirectory(const Directory &full, const std::vector<uint32_t> &target_entries) {
  Directory d;
  uint64_t highest = 0;
  for (uint32_t e : target_entries) {
    d.starts.push_back(full.starts[e]);
    d.ends.push_back(full.ends[e]);
    d.flags.push_back(full.flags[e]);
    d.heaps.push_back(full.heaps[e]);
    highest = std::max(highest, full.ends[e]);
  }
  d.setHighest(highest);
  return d;
}

void PageFilter::build(const Directory &directory, size_t max_bitmaps) {
  granules_.clear();
  bits_.clear();
  if (directory.size() == 0) {
    lo_ = 1;
    span_ = 0;
    granules_.push_back(kNone);
    return;
  }
  // Granules of 2^30 bytes or more, so that the range takes at most 2^17 of them.
  granule_shift_ = 30;
  const uint64_t lowest = directory.lowest(), highest = directory.highest();
  while (((highest - 1 - (lowest & ~((uint64_t(1) << granule_shift_) - 1))) >> granule_shift_) >=
         (uint64_t(1) << 17))
    ++granule_shift_;
  page_shift_ = granule_shift_ - kPageBits;
  lo_ = lowest & ~((uint64_t(1) << granule_shift_) - 1);
  span_ = highest - lo_;
  granules_.assign(size_t(((highest - 1 - lo_) >> granule_shift_) + 1), kNone);
  const uint64_t granule_bytes = uint64_t(1) << granule_shift_;
  for (size_t i = 0; i < directory.size(); ++i) {
    const uint64_t start = directory.starts[i] - lo_, last = directory.ends[i] - 1 - lo_;
    for (uint64_t g = start >> granule_shift_; g <= last >> granule_shift_; ++g) {
      uint32_t &slot = granules_[g];
      if (slot == kAll)
        continue;
      const uint64_t g_start = g << granule_shift_;
      const bool whole = start <= g_start && last >= g_start + granule_bytes - 1;
      if (whole || (slot == kNone && bits_.size() / kWordsPerBitmap >= max_bitmaps)) {
        slot = kAll;
        continue;
      }
      if (slot == kNone) {
        slot = static_cast<uint32_t>(kFirstBitmap + bits_.size() / kWordsPerBitmap);
        bits_.resize(bits_.size() + kWordsPerBitmap, 0);
      }
      uint64_t *bitmap = bits_.data() + size_t(slot - kFirstBitmap) * kWordsPerBitmap;
      const uint64_t first = (std::max(start, g_start) >> page_shift_) & (kPagesPerGranule - 1);
      const uint64_t end_page =
          (std::min(last, g_start + granule_bytes - 1) >> page_shift_) & (kPagesPerGranule - 1);
      for (uint64_t p = first; p <= end_page; ++p)
        bitmap[p / 64] |= uint64_t(1) << (p % 64);
    }
  }
}

} // namespace holders

} // namespace dumpsift
