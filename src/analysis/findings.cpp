// Findings: each detector looks at the buffers the analysis kept and names one kind of waste.
// Hashes computed by the analysis suggest identical content; a byte comparison confirms it.
// Growth chains are found by bucketing buffers on a hash of their first 256 bytes and comparing
// only within a bucket, nearest sizes first, with a bounded number of tries per buffer.
// docs/findings.md describes every type, its numbers and its limits.
#include "dumpsift/analysis/findings.h"

#include "dumpsift/analysis/analysis.h"
#include "dumpsift/support/bytes.h"
#include "dumpsift/support/sizes.h"
#include "parallel.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace dumpsift {

namespace {

/// A finding that costs less than this is not worth a line of the summary.
constexpr uint64_t kMinFindingBytes = 64 * 1024;
/// "Many" buffers of one size and kind: likely one code path allocating per request.
constexpr uint64_t kManySameSize = 100;
/// Growth chains: buffers are bucketed by a hash of this many first bytes (the smallest link).
constexpr size_t kChainHeadBytes = 256;
constexpr size_t kMinChainLength = 3;
/// A growth step multiplies the capacity by a factor in [kMinGrowth, kMaxGrowth]; every step of a
/// chain is within kGrowthTolerance (relative) of the chain's median factor.
constexpr double kMinGrowth = 1.15, kMaxGrowth = 4.0, kGrowthTolerance = 0.15;
/// Prefix comparisons tried per buffer when looking for its predecessor in a chain.
constexpr unsigned kMaxPrefixTries = 8;
/// Bytes at the end of an allocation that may hold allocator slack rather than written content:
/// glibc rounds heap chunks up to 16 bytes and mmapped chunks up to whole pages.
constexpr uint64_t kSlackBytes = 32, kPageSize = 4096;
/// A well-known size besides the walkers' own thresholds (WalkerTraits::thresholds): an S3 SigV4
/// signed chunk frame (an 88-byte header, 128 KiB of data, CRLF). "Just above" a threshold means
/// within an eighth of it. Powers of two from kMinPoolBucket up count as pool buckets.
constexpr uint64_t kS3ChunkFrame = 131162;
constexpr uint64_t kMinPoolBucket = 4096;

/// A power of two in words: "1 MiB", "128 KiB" ("512 bytes" under 1 KiB).
std::string powerLabel(uint64_t p) {
  if (p >= (1u << 20) && p % (1u << 20) == 0)
    return std::to_string(p >> 20) + " MiB";
  if (p >= 1024 && p % 1024 == 0)
    return std::to_string(p >> 10) + " KiB";
  return groupedDigits(p) + " bytes";
}

/// What a buffer holds, in words: "1024x768 jpeg", "json", "random-looking data".
std::string contentWords(const Buffer &b) {
  switch (b.content.kind) {
  case ContentKind::Unknown:
    return "data";
  case ContentKind::Random:
    return "random-looking data";
  case ContentKind::Zero:
    return "zeros";
  default:
    break;
  }
  std::string name = kindName(b.content.kind).str();
  if (b.content.width && b.content.height)
    return std::to_string(b.content.width) + "x" + std::to_string(b.content.height) + " " + name;
  return name;
}

/// What every detector shares: the buffers findings may look at and their captured bytes.
struct Context {
  const AddressSpace &memory;
  const Analysis &analysis;
  /// Indices of buffers that are not free (free memory is the allocator's, not anyone's waste).
  std::vector<size_t> held;
  /// Per buffer: its captured payload when the dump holds all of it, else empty.
  std::vector<llvm::ArrayRef<uint8_t>> bytes;
  /// Per buffer: the end of its content (its last non-zero byte plus one), for complete buffers
  /// that are not all zero; 0 otherwise.
  std::vector<uint64_t> content_end;
  /// Per buffer: the lowest-address buffer with identical content (itself when unique).
  std::vector<size_t> representative;

  /// The buffers' bytes and content ends are looked up once (the backward scans cost the zero
  /// tails); `representative` is filled by findDuplicates.
  Context(const AddressSpace &m, const Analysis &a) : memory(m), analysis(a) {
    const std::vector<Buffer> &buffers = analysis.buffers;
    bytes.resize(buffers.size());
    content_end.resize(buffers.size(), 0);
    representative.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      representative[i] = i;
      const Buffer &b = buffers[i];
      if (b.allocation.state == AllocState::Free)
        continue;
      held.push_back(i);
      llvm::ArrayRef<uint8_t> payload = capturedPayload(memory, b);
      if (payload.empty() || payload.size() != b.payloadSize())
        continue;
      bytes[i] = payload;
      if (b.content.kind != ContentKind::Zero)
        content_end[i] =
            b.content_end ? std::min(*b.content_end, payload.size()) : contentEnd(payload);
    }
  }

  const Buffer &buffer(size_t i) const { return analysis.buffers[i]; }
  /// True when the dump holds every payload byte of buffer `i` and it is not free.
  bool complete(size_t i) const { return !bytes[i].empty(); }
  /// True when the buffer's size is an allocation size (not a region-scan estimate).
  bool allocated(size_t i) const { return buffer(i).source != kRegionScan && !buffer(i).estimated; }
};

/// Buffers ordered by address (the analysis keeps them so; indices follow).
void sortByAddress(const Context &ctx, std::vector<size_t> &members) {
  std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
    return ctx.buffer(a).allocation.address < ctx.buffer(b).allocation.address;
  });
}

/// The allocation addresses of `members`, in the given order.
std::vector<uint64_t> addressesOf(const Context &ctx, const std::vector<size_t> &members) {
  std::vector<uint64_t> out;
  out.reserve(members.size());
  for (size_t i : members)
    out.push_back(ctx.buffer(i).allocation.address);
  return out;
}

// ---------------------------------------------------------------------------------------------
// duplicates
// ---------------------------------------------------------------------------------------------

/// The payload address standing for buffer `i`'s bytes: that of the buffer the analysis found
/// identical to it (Buffer::identical_to), else its own.
uint64_t identityRoot(const Context &ctx, size_t i) {
  const Buffer &b = ctx.buffer(i);
  return b.identical_to ? *b.identical_to : b.payloadAddress();
}

/// Splits `members` (buffers of one size and hash) into classes of byte-identical payloads, in
/// the order of their first members; almost always one class (a hash collision makes two).
/// Buffers the analysis already compared share an identity root; the others are compared here,
/// and their pages released afterwards (see AddressSpace::releasePages).
std::vector<std::vector<size_t>> identicalClasses(const Context &ctx,
                                                  const std::vector<size_t> &members) {
  std::vector<std::vector<size_t>> classes;
  bool compared = false;
  for (size_t i : members) {
    auto same = std::find_if(classes.begin(), classes.end(), [&](const std::vector<size_t> &c) {
      if (identityRoot(ctx, c.front()) == identityRoot(ctx, i))
        return true;
      compared = true;
      return ctx.bytes[c.front()].equals(ctx.bytes[i]); // no memcmp of null when empty
    });
    if (same == classes.end())
      classes.push_back({i});
    else
      same->push_back(i);
  }
  if (compared)
    for (size_t i : members)
      ctx.memory.releasePages(ctx.buffer(i).payloadAddress(), ctx.bytes[i].size());
  return classes;
}

/// Sets of buffers with byte-identical payloads (same size, same hash, confirmed by memcmp), each
/// by address. Zero-filled buffers are left to zero-filled. Fills ctx.representative. The byte
/// comparisons run on the analysis's threads.
std::vector<std::vector<size_t>> findDuplicates(Context &ctx) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<size_t>> by_hash;
  for (size_t i : ctx.held)
    if (ctx.complete(i) && ctx.buffer(i).content.kind != ContentKind::Zero)
      by_hash[{ctx.bytes[i].size(), ctx.buffer(i).hash}].push_back(i);
  std::vector<const std::vector<size_t> *> candidates; // by (size, hash)
  for (const auto &[key, members] : by_hash)
    if (members.size() >= 2)
      candidates.push_back(&members);
  std::vector<std::vector<std::vector<size_t>>> classes(candidates.size());
  detail::parallelFor(
      candidates.size(), ctx.analysis.options.threads,
      [&](size_t g) { classes[g] = identicalClasses(ctx, *candidates[g]); }, [] {});

  std::vector<std::vector<size_t>> sets;
  for (std::vector<std::vector<size_t>> &group : classes) {
    for (std::vector<size_t> &c : group) {
      if (c.size() < 2)
        continue;
      sortByAddress(ctx, c);
      for (size_t i : c)
        ctx.representative[i] = c.front();
      sets.push_back(std::move(c));
    }
  }
  return sets;
}

/// One finding per set: count, size, the wasted (count - 1) x size.
void reportDuplicates(const Context &ctx, const std::vector<std::vector<size_t>> &sets,
                      std::vector<Finding> &out) {
  for (const std::vector<size_t> &set : sets) {
    const Buffer &first = ctx.buffer(set.front());
    uint64_t count = set.size(), size = first.allocation.size;
    Finding f;
    f.type = "duplicates";
    f.bytes = (count - 1) * size;
    f.addresses = addressesOf(ctx, set);
    f.numbers = {{"count", count}, {"size", size}, {"total_bytes", count * size}};
    f.explanation = std::to_string(count) + " buffers of " + groupedDigits(size) +
                    " bytes hold the same " + contentWords(first) + ": " +
                    std::to_string(count - 1) + " redundant " +
                    (count == 2 ? "copy wastes " : "copies waste ") + humanBytes(f.bytes);
    out.push_back(std::move(f));
  }
}

// ---------------------------------------------------------------------------------------------
// growth-chain
// ---------------------------------------------------------------------------------------------

/// True when `small` looks like an old array of a buffer that grew into `large`: the content of
/// `small` (all but its last few bytes of allocator slack) is the start of `large`, and `small` was
/// full (its content reaches past its middle), as an array is when it is outgrown.
bool isOutgrownBy(const Context &ctx, size_t small, size_t large, uint64_t small_end) {
  llvm::ArrayRef<uint8_t> a = ctx.bytes[small], b = ctx.bytes[large];
  if (a.size() >= b.size() || small_end * 2 < a.size())
    return false;
  uint64_t slack = kSlackBytes + (ctx.buffer(small).allocation.mmapped ? kPageSize : 0);
  uint64_t compared = a.size() > 2 * slack ? a.size() - slack : a.size() / 2;
  return compared == 0 || std::memcmp(a.data(), b.data(), compared) == 0;
}

/// The median of `ratios` (lower middle for an even count); ratios must not be empty.
double medianRatio(std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  return ratios[(ratios.size() - 1) / 2];
}

/// Splits an ascending chain where a step strays from the median factor; keeps the runs of at
/// least kMinChainLength buffers, each with its median factor.
std::vector<std::pair<std::vector<size_t>, double>>
geometricRuns(const Context &ctx, const std::vector<size_t> &chain) {
  std::vector<std::pair<std::vector<size_t>, double>> runs;
  if (chain.size() < kMinChainLength)
    return runs;
  std::vector<double> ratios;
  for (size_t k = 1; k < chain.size(); ++k)
    ratios.push_back(static_cast<double>(ctx.bytes[chain[k]].size()) /
                     static_cast<double>(ctx.bytes[chain[k - 1]].size()));
  double factor = medianRatio(ratios);
  std::vector<size_t> run{chain.front()};
  auto flush = [&] {
    if (run.size() >= kMinChainLength) {
      std::vector<double> own;
      for (size_t k = 1; k < run.size(); ++k)
        own.push_back(static_cast<double>(ctx.bytes[run[k]].size()) /
                      static_cast<double>(ctx.bytes[run[k - 1]].size()));
      runs.emplace_back(run, medianRatio(own));
    }
  };
  for (size_t k = 1; k < chain.size(); ++k) {
    if (std::fabs(ratios[k - 1] / factor - 1.0) > kGrowthTolerance) {
      flush();
      run.clear();
    }
    run.push_back(chain[k]);
  }
  flush();
  return runs;
}

/// "x2", "x1.5": a growth factor rounded to a tenth.
std::string factorWords(double factor) {
  long tenths = std::lround(factor * 10);
  std::string s = "x" + std::to_string(tenths / 10);
  if (tenths % 10)
    s += "." + std::to_string(tenths % 10);
  return s;
}

/// Finds the trails of growing buffers: chains of buffers, each holding the start of the next,
/// whose capacities grow by a steady factor. One finding per chain; its addresses go from the
/// smallest array to the largest.
void findGrowthChains(const Context &ctx, std::vector<Finding> &out) {
  // Bucket the candidates (one per set of identical copies) by the hash of their first bytes.
  // Buffers are held in address order; the pages each head read maps go behind the loop.
  std::map<uint64_t, std::vector<size_t>> by_head;
  {
    ReleaseBehind behind(ctx.memory, 0, UINT64_MAX);
    for (size_t i : ctx.held) {
      if (!ctx.complete(i) || !ctx.allocated(i) || ctx.representative[i] != i ||
          ctx.buffer(i).content.kind == ContentKind::Zero || ctx.bytes[i].size() < kChainHeadBytes)
        continue;
      behind.passed(ctx.buffer(i).payloadAddress());
      by_head[llvm::xxHash64(ctx.bytes[i].take_front(kChainHeadBytes))].push_back(i);
    }
  }
  std::vector<size_t> predecessor(ctx.analysis.buffers.size(), SIZE_MAX);
  std::vector<bool> has_successor(ctx.analysis.buffers.size(), false);
  std::vector<size_t> linked; // buffers with a predecessor
  for (auto &[head, bucket] : by_head) {
    if (bucket.size() < kMinChainLength)
      continue;
    std::sort(bucket.begin(), bucket.end(), [&](size_t a, size_t b) {
      return std::make_pair(ctx.bytes[a].size(), ctx.buffer(a).allocation.address) <
             std::make_pair(ctx.bytes[b].size(), ctx.buffer(b).allocation.address);
    });
    for (size_t j = 1; j < bucket.size(); ++j) {
      double large = static_cast<double>(ctx.bytes[bucket[j]].size());
      // Nearest smaller sizes first: the last array before this one. Sizes too close to this
      // one (same-size buffers among them) are skipped by a binary search, not one by one.
      auto limit = static_cast<uint64_t>(large / kMinGrowth);
      size_t k = static_cast<size_t>(
          std::upper_bound(bucket.begin(), bucket.begin() + j, limit,
                           [&](uint64_t size, size_t i) { return size < ctx.bytes[i].size(); }) -
          bucket.begin());
      // Each comparison maps the pages it reads (usually the first of each buffer): they go
      // after this buffer's tries, or the resident set grows with the buffers compared.
      auto release = [&](size_t i) {
        ctx.memory.releasePages(ctx.buffer(i).payloadAddress(), ctx.bytes[i].size());
      };
      release(bucket[j]);
      for (unsigned tries = 0; k-- > 0 && tries < kMaxPrefixTries; ++tries) {
        size_t i = bucket[k];
        if (large / static_cast<double>(ctx.bytes[i].size()) > kMaxGrowth)
          break;
        const bool outgrown = isOutgrownBy(ctx, i, bucket[j], ctx.content_end[i]);
        release(i);
        if (outgrown) {
          predecessor[bucket[j]] = i;
          has_successor[i] = true;
          linked.push_back(bucket[j]);
          break;
        }
      }
    }
  }
  // Walk down from each chain's largest buffer; a buffer belongs to the first chain that reaches
  // it (largest top first), so no bytes are counted twice.
  std::vector<size_t> tops;
  for (size_t i : linked)
    if (!has_successor[i])
      tops.push_back(i);
  std::sort(tops.begin(), tops.end(), [&](size_t a, size_t b) {
    if (ctx.bytes[a].size() != ctx.bytes[b].size())
      return ctx.bytes[a].size() > ctx.bytes[b].size();
    return ctx.buffer(a).allocation.address < ctx.buffer(b).allocation.address;
  });
  std::vector<bool> used(ctx.analysis.buffers.size(), false);
  for (size_t top : tops) {
    std::vector<size_t> chain;
    for (size_t i = top; i != SIZE_MAX && !used[i]; i = predecessor[i]) {
      used[i] = true;
      chain.push_back(i);
    }
    std::reverse(chain.begin(), chain.end());
    for (auto &[run, factor] : geometricRuns(ctx, chain)) {
      const Buffer &final_buffer = ctx.buffer(run.back());
      uint64_t total = 0;
      for (size_t i : run)
        total += ctx.buffer(i).allocation.size;
      uint64_t first_size = ctx.buffer(run.front()).allocation.size;
      uint64_t final_size = final_buffer.allocation.size;
      Finding f;
      f.type = "growth-chain";
      f.bytes = total - final_size;
      f.addresses = addressesOf(ctx, run);
      f.numbers = {{"count", run.size()},
                   {"first_size", first_size},
                   {"final_size", final_size},
                   {"total_bytes", total},
                   {"growth_percent", static_cast<uint64_t>(std::lround(factor * 100))}};
      // What the stream is: the largest array's kind that the sniffer recognised (the final
      // array may end in slack that hides it).
      std::string kind = "data";
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        ContentKind k = ctx.buffer(*it).content.kind;
        if (k != ContentKind::Unknown) {
          kind = k == ContentKind::Random ? "random-looking" : kindName(k).str();
          break;
        }
      }
      f.explanation =
          "a buffer grew " + factorWords(factor) + " at a time from " + groupedDigits(first_size) +
          " to " + groupedDigits(final_size) + " bytes and left " + std::to_string(run.size() - 1) +
          " outgrown arrays behind, each holding the start of the same " + kind +
          " stream: " + humanBytes(f.bytes) + " wasted (" + humanBytes(total) + " in all)";
      // The analysis keeps nothing under --min-size: say so when the trail may go on below it.
      double previous = static_cast<double>(first_size) / factor;
      if (previous >= kChainHeadBytes &&
          previous < static_cast<double>(ctx.analysis.options.min_size))
        f.explanation += "; smaller arrays, if any, are under --min-size " +
                         groupedDigits(ctx.analysis.options.min_size);
      out.push_back(std::move(f));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// zero-filled and zero-tail
// ---------------------------------------------------------------------------------------------

/// One finding per size: buffers that are entirely zero.
void findZeroFilled(const Context &ctx, std::vector<Finding> &out) {
  std::map<uint64_t, std::vector<size_t>> by_size;
  for (size_t i : ctx.held)
    if (ctx.complete(i) && ctx.buffer(i).content.kind == ContentKind::Zero)
      by_size[ctx.buffer(i).allocation.size].push_back(i);
  for (auto &[size, members] : by_size) {
    uint64_t count = members.size();
    Finding f;
    f.type = "zero-filled";
    f.bytes = count * size;
    f.addresses = addressesOf(ctx, members);
    f.numbers = {{"count", count}, {"size", size}};
    f.explanation =
        (count == 1 ? "a buffer of " + groupedDigits(size) + " bytes is"
                    : std::to_string(count) + " buffers of " + groupedDigits(size) + " bytes are") +
        " entirely zero: " + humanBytes(f.bytes) +
        " holding nothing (pool buffers rented and returned, or memory allocated ahead of need)";
    if (count >= kManySameSize)
      f.explanation += "; that many of one size is likely a pool";
    out.push_back(std::move(f));
  }
}

/// One finding per size: buffers whose content ends before the middle of their capacity and
/// whose tail is all zero.
void findZeroTails(const Context &ctx, std::vector<Finding> &out) {
  struct Tail {
    size_t index;
    uint64_t content;
  };
  std::map<uint64_t, std::vector<Tail>> by_size;
  for (size_t i : ctx.held) {
    if (!ctx.complete(i) || !ctx.allocated(i) || ctx.buffer(i).content.kind == ContentKind::Zero)
      continue;
    uint64_t content = ctx.content_end[i];
    if (content > 0 && content * 2 <= ctx.bytes[i].size())
      by_size[ctx.buffer(i).allocation.size].push_back({i, content});
  }
  for (auto &[size, tails] : by_size) {
    uint64_t count = tails.size(), content = 0, largest = 0, tail_bytes = 0;
    std::vector<size_t> members;
    for (const Tail &t : tails) {
      content += t.content;
      largest = std::max(largest, t.content);
      tail_bytes += size - t.content;
      members.push_back(t.index);
    }
    Finding f;
    f.type = "zero-tail";
    f.bytes = tail_bytes;
    f.addresses = addressesOf(ctx, members);
    f.numbers = {{"count", count}, {"size", size}, {"content_bytes", content}};
    uint64_t unused_percent = tail_bytes * 100 / (count * size);
    if (count == 1)
      f.explanation =
          "a buffer of " + groupedDigits(size) + " bytes holds " + groupedDigits(content) +
          " bytes of " + contentWords(ctx.buffer(members.front())) + " and then " +
          groupedDigits(tail_bytes) + " zero bytes: its capacity is far beyond its content (" +
          std::to_string(unused_percent) + "% unused)";
    else
      f.explanation = std::to_string(count) + " buffers of " + groupedDigits(size) +
                      " bytes hold at most " + groupedDigits(largest) +
                      " bytes of content each and then " + "zeros: " + humanBytes(tail_bytes) +
                      " of capacity far beyond the content (" + std::to_string(unused_percent) +
                      "% unused)";
    out.push_back(std::move(f));
  }
}

// ---------------------------------------------------------------------------------------------
// size-class and many-same-size
// ---------------------------------------------------------------------------------------------

/// What the walker that reported buffer `b` states of its allocations (WalkerTraits); nullptr for
/// a buffer of the region scan.
const WalkerTraits *walkerTraits(const Context &ctx, const Buffer &b) {
  if (b.source == kRegionScan || b.source >= ctx.analysis.heaps.size())
    return nullptr;
  const HeapWalker *walker = findHeapWalker(ctx.analysis.heaps[b.source].walker);
  return walker ? &walker->traits() : nullptr;
}

/// The request sizes that could have produced buffer `b`: a managed array's length is exact;
/// otherwise what its walker says of its rounding (WalkerTraits::requests), else its size.
RequestRange requestRange(const Context &ctx, const Buffer &b) {
  const Allocation &a = b.allocation;
  if (a.managed) {
    uint64_t n = a.managed->length * std::max<uint64_t>(1, a.managed->element_size);
    return {n, n};
  }
  if (const WalkerTraits *traits = walkerTraits(ctx, b); traits && traits->requests)
    return traits->requests(a);
  return {a.size, a.size};
}

/// One finding per group (same size, allocator and placement, at least two members) whose size
/// sits just above a well-known threshold or on a pool bucket.
void findSizeClasses(const Context &ctx, std::vector<Finding> &out) {
  std::map<std::tuple<uint64_t, uint16_t, bool, bool>, std::vector<size_t>> groups;
  for (size_t i : ctx.held) {
    const Buffer &b = ctx.buffer(i);
    if (ctx.allocated(i))
      groups[{b.allocation.size, b.source, b.allocation.mmapped, b.allocation.managed.has_value()}]
          .push_back(i);
  }
  for (auto &[key, members] : groups) {
    if (members.size() < 2)
      continue;
    const Buffer &first = ctx.buffer(members.front());
    const Allocation &a = first.allocation;
    const bool managed = a.managed.has_value();
    const WalkerTraits *traits = walkerTraits(ctx, first);
    RequestRange requests = requestRange(ctx, first);
    bool holds_aws = std::any_of(members.begin(), members.end(), [&](size_t i) {
      return ctx.buffer(i).content.kind == ContentKind::AwsChunked;
    });
    const std::string noun = managed                      ? "arrays"
                             : traits && traits->requests ? "requests"
                                                          : "buffers";
    std::vector<std::string> what, meaning;
    uint64_t threshold = 0;
    auto note_threshold = [&](uint64_t t) {
      if (!threshold)
        threshold = t;
    };
    static const std::vector<SizeThreshold> kNoThresholds;
    for (const SizeThreshold &t : traits ? traits->thresholds : kNoThresholds) {
      if (t.concerns && !t.concerns(a))
        continue;
      const RequestRange measured = t.measures_block ? RequestRange{a.size, a.size} : requests;
      if (measured.hi >= t.bytes && measured.lo <= t.bytes + t.bytes / 8) {
        note_threshold(t.bytes);
        meaning.push_back(t.meaning(a));
      }
    }
    if (requests.contains(kS3ChunkFrame) && (requests.exact() || holds_aws)) {
      note_threshold(kS3ChunkFrame);
      what.push_back("131,162-byte S3 signed chunk frames (128 KiB of data plus 90 bytes of "
                     "framing)");
    }
    uint64_t bucket = requests.lo <= (uint64_t(1) << 62)
                          ? std::bit_ceil(std::max<uint64_t>(requests.lo, 1))
                          : 0; // no power of two above: bit_ceil would overflow
    if (bucket >= kMinPoolBucket && requests.contains(bucket)) {
      note_threshold(bucket);
      what.push_back(powerLabel(bucket) + " (" + groupedDigits(bucket) + "-byte) " + noun);
      meaning.push_back(groupedDigits(bucket) +
                        " bytes is a power-of-two pool bucket (ArrayPool-style "
                        "pools round requests up to a power of two)");
    }
    if (!threshold)
      continue;
    uint64_t count = members.size();
    Finding f;
    f.type = "size-class";
    f.bytes = count * a.size;
    f.addresses = addressesOf(ctx, members);
    f.numbers = {{"count", count}, {"size", a.size}, {"threshold", threshold}};
    f.explanation = std::to_string(count) + " buffers of " + groupedDigits(a.size) + " bytes";
    for (size_t k = 0; k < what.size(); ++k)
      f.explanation += (k == 0 ? " are " : " and ") + what[k];
    for (size_t k = 0; k < meaning.size(); ++k)
      f.explanation += (k == 0 ? ": " : "; ") + meaning[k];
    out.push_back(std::move(f));
  }
}

/// One finding per (size, kind) with at least kManySameSize members (zero-filled has its own).
void findManySameSize(const Context &ctx, std::vector<Finding> &out) {
  std::map<std::pair<uint64_t, ContentKind>, std::vector<size_t>> groups;
  for (size_t i : ctx.held) {
    const Buffer &b = ctx.buffer(i);
    if (ctx.allocated(i) && b.content.kind != ContentKind::Zero)
      groups[{b.allocation.size, b.content.kind}].push_back(i);
  }
  for (auto &[key, members] : groups) {
    uint64_t count = members.size();
    if (count < kManySameSize)
      continue;
    Finding f;
    f.type = "many-same-size";
    f.bytes = count * key.first;
    f.addresses = addressesOf(ctx, members);
    f.numbers = {{"count", count}, {"size", key.first}};
    std::string kind = key.second == ContentKind::Unknown ? std::string("unrecognised data")
                                                          : kindName(key.second).str();
    f.explanation = std::to_string(count) + " buffers of " + groupedDigits(key.first) +
                    " bytes all hold " + kind + " (" + humanBytes(f.bytes) +
                    "): likely one code path allocating a buffer per request, or a pool holding "
                    "them";
    out.push_back(std::move(f));
  }
}

// ---------------------------------------------------------------------------------------------
// held-by-type
// ---------------------------------------------------------------------------------------------

/// One finding per managed type (or any type whose fields the holders pass names) some object of
/// which holds buffers in two fields or more: the story's upload stream holding a 128 KiB input
/// and output buffer per upload. It counts every buffer a named field of an object of the type
/// holds (array elements and statics are not fields of an object), the objects, and what each
/// field holds.
void findHeldByType(const Context &ctx, std::vector<Finding> &out) {
  const Holders &holders = ctx.analysis.holders;
  if (holders.buffers.size() != ctx.analysis.buffers.size())
    return; // no holders pass
  struct Held {
    std::map<uint64_t, std::set<llvm::StringRef>> fields_of_object; // object -> its fields
    std::map<llvm::StringRef, std::vector<size_t>> buffers_of_field;
    std::set<size_t> buffers;
  };
  std::map<llvm::StringRef, Held> by_type;
  for (size_t i : ctx.held)
    for (const Holder &h : holders.buffers[i].holders) {
      if (h.kind != HolderKind::Heap || h.is_static || h.class_name.empty() || h.field.empty() ||
          h.field.startswith("["))
        continue;
      Held &held = by_type[h.class_name];
      held.fields_of_object[h.block].insert(h.field);
      std::vector<size_t> &of_field = held.buffers_of_field[h.field];
      if (of_field.empty() || of_field.back() != i)
        of_field.push_back(i);
      held.buffers.insert(i);
    }
  for (const auto &[type, held] : by_type) {
    const bool several_fields =
        std::any_of(held.fields_of_object.begin(), held.fields_of_object.end(),
                    [](const auto &object) { return object.second.size() > 1; });
    if (!several_fields)
      continue;
    const uint64_t objects = held.fields_of_object.size();
    Finding f;
    f.type = "held-by-type";
    std::vector<size_t> members(held.buffers.begin(), held.buffers.end());
    for (size_t i : members)
      f.bytes += ctx.buffer(i).allocation.size;
    sortByAddress(ctx, members);
    f.addresses = addressesOf(ctx, members);
    f.numbers = {{"objects", objects},
                 {"buffers", members.size()},
                 {"fields", held.buffers_of_field.size()},
                 {"bytes_per_object", f.bytes / objects}};
    f.explanation = std::to_string(objects) + " `" + type.str() + "` object" +
                    (objects == 1 ? " holds " : "s hold ") + std::to_string(members.size()) +
                    " buffers (" + humanBytes(f.bytes) + ", " + humanBytes(f.bytes / objects) +
                    " per object): ";
    bool first = true;
    for (const auto &[field, buffers] : held.buffers_of_field) {
      uint64_t size = ctx.buffer(buffers.front()).allocation.size, total = 0;
      bool one_size = true;
      for (size_t i : buffers) {
        total += ctx.buffer(i).allocation.size;
        one_size &= ctx.buffer(i).allocation.size == size;
      }
      f.explanation +=
          (first ? "`" : ", `") + field.str() + "` " +
          (one_size ? std::to_string(buffers.size()) + " x " + groupedDigits(size) + " bytes"
                    : std::to_string(buffers.size()) + " buffers, " + humanBytes(total));
      first = false;
    }
    out.push_back(std::move(f));
  }
}

} // namespace

std::vector<Finding> computeFindings(const AddressSpace &memory, const Analysis &analysis) {
  Context ctx(memory, analysis);
  std::vector<Finding> findings;
  std::vector<std::vector<size_t>> duplicates = findDuplicates(ctx);
  reportDuplicates(ctx, duplicates, findings);
  findGrowthChains(ctx, findings);
  findZeroFilled(ctx, findings);
  findZeroTails(ctx, findings);
  findSizeClasses(ctx, findings);
  findManySameSize(ctx, findings);
  findHeldByType(ctx, findings);
  std::erase_if(findings, [](const Finding &f) { return f.bytes < kMinFindingBytes; });
  std::sort(findings.begin(), findings.end(), [](const Finding &a, const Finding &b) {
    uint64_t a_first = a.addresses.empty() ? 0 : a.addresses.front();
    uint64_t b_first = b.addresses.empty() ? 0 : b.addresses.front();
    return std::tie(b.bytes, a.type, a_first) < std::tie(a.bytes, b.type, b_first);
  });
  return findings;
}

} // namespace dumpsift
