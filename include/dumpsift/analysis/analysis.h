// Analysis: walk every heap, keep the large buffers, sniff them, group them by size.
// The result is a plain model; report writers turn it into JSON or text.
#pragma once

#include "dumpsift/analysis/findings.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/unclaimed.h"
#include "dumpsift/heap/walk.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/holders/holders.h"
#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

/// How buffers are grouped: by exact size (and state), or by size and kind (one row per pair).
enum class GroupBy { Size, SizeKind };

struct AnalyzeOptions {
  uint64_t min_size = 64 * 1024; // documented default: 64 KiB
  uint64_t max_size = UINT64_MAX;
  std::vector<ContentKind> kinds;   // keep only these kinds (empty: all)
  std::optional<AllocState> state;  // keep only this state (empty: all)
  std::vector<std::string> walkers; // use only these walkers (empty: every one that detects)
  bool region_scan = true;          // also scan memory no walker claims
  unsigned threads = 0;             // 0: one per core
  bool full_hash = false;           // hash every payload byte (else: see payloadFingerprint)
  GroupBy group_by = GroupBy::Size;
  /// The whole run's sniffing budget (SniffBudget): bytes the gzip and zlib sniffers may inflate
  /// in the region scan and in the buffers that need more than kFirstPassInflate each.
  uint64_t inflate_budget = 128ull << 20;
  /// Who holds each buffer (--holders, --module-path; docs/holders.md): the mode, the directories
  /// searched for module files, and the budget of blocks and references.
  HoldersMode holders = HoldersMode::Chains;
  std::vector<std::string> module_paths;
  bool module_files = true; // read module files for names (--no-module-files: the dump only)
  uint64_t holder_budget = kDefaultHolderBudget;
};

/// Inflated output each buffer's first sniff may produce (all buffers on all threads); a buffer
/// that needed more is sniffed again, in address order, from AnalyzeOptions::inflate_budget.
constexpr uint64_t kFirstPassInflate = 64 * 1024;

/// Where a buffer came from: a heap walker, or the region scan of unclaimed memory.
constexpr uint16_t kRegionScan = 0xffff;

/// Content with a strong signature found inside a large free block: what the block held before it
/// was freed (a JPEG, an S3 upload's frame), which the process could hand back.
struct StaleContent {
  uint64_t offset = 0; // from the block's payload start
  uint64_t length = 0; // the format's extent, or an estimate (see estimated)
  ContentKind kind = ContentKind::Unknown;
  bool estimated = false; // the extent is a guess, as a region scan hit's
};

/// Free blocks of at least this many bytes are scanned for stale content (scanFreeBlocks).
constexpr uint64_t kStaleScanMinBytes = 64 * 1024;

/// One large buffer with what it holds.
struct Buffer {
  Allocation allocation;
  uint16_t source = 0;       // index into Analysis::heaps, or kRegionScan
  SniffResult content;       // offsets are relative to the payload start
  uint64_t captured = 0;     // payload bytes the dump holds (from the payload start)
  uint64_t hash = 0;         // payloadFingerprint of the captured payload bytes
  bool hash_sampled = false; // hash covers sampled windows, not every byte (payloadFingerprint)
  bool estimated = false;    // region scan: the extent is a guess from the content
  /// End of the content in the captured payload (its last non-zero byte plus one), found while
  /// the bytes are hashed; empty when not computed.
  std::optional<uint64_t> content_end;
  /// Payload address of a buffer sniffed earlier whose captured payload was compared byte for byte
  /// with this one's and found identical (the sniff reuses its result); empty when none was.
  std::optional<uint64_t> identical_to;
  /// A free block of kStaleScanMinBytes or more: the content with a strong signature inside it,
  /// by offset (empty for other buffers and free blocks that hold none).
  std::vector<StaleContent> stale_content;

  uint64_t payloadAddress() const { return allocation.address + allocation.data_offset; }
  uint64_t payloadSize() const {
    return allocation.size > allocation.data_offset ? allocation.size - allocation.data_offset : 0;
  }
};

/// Buffers of one exact size and state (and kind, with GroupBy::SizeKind).
struct SizeGroup {
  uint64_t size = 0;
  AllocState state = AllocState::Unknown;
  std::optional<ContentKind> kind; // set with GroupBy::SizeKind
  std::string allocator;           // "glibc", "coreclr", ... ("mixed" if several)
  uint64_t count = 0;
  uint64_t total_bytes = 0;
  std::vector<std::pair<ContentKind, uint64_t>> kinds; // count per kind, most first
  std::vector<size_t> members;                         // indices into Analysis::buffers, by address
};

struct Analysis {
  AnalyzeOptions options;
  std::vector<HeapWalkResult> heaps;
  std::vector<Buffer> buffers;           // sorted by address
  std::vector<SizeGroup> groups;         // by total bytes, largest first
  std::vector<UnclaimedRange> unclaimed; // memory no walker claims (see unclaimedRanges)
  std::vector<Finding> findings;
  /// Who holds each buffer: holders.buffers[i] is buffers[i]'s (empty with --holders none).
  Holders holders;
  uint64_t allocations_seen = 0; // every allocation the walkers reported
  Diagnostics diagnostics;       // walker and sniffer warnings (the snapshot keeps its own)
};

/// Runs the whole pipeline over `memory`. Never fails: damage becomes diagnostics.
Analysis analyze(
    const AddressSpace &memory, const AnalyzeOptions &options,
    ProgressFn progress = [](llvm::StringRef, uint64_t, uint64_t) {});

/// Bytes of each window payloadFingerprint hashes, and the windows it samples in all.
constexpr uint64_t kFingerprintWindow = 4096;
constexpr unsigned kFingerprintWindows = 18;

/// A fingerprint of `payload` for finding identical buffers: equal payloads have equal
/// fingerprints, so two buffers with different fingerprints differ, and those with equal ones are
/// candidate copies (compared byte for byte before anything calls them identical). With `full`,
/// or when the payload is no longer than kFingerprintWindows windows, it is xxHash64 of every
/// byte; otherwise xxHash64 over the size and kFingerprintWindows windows of kFingerprintWindow
/// bytes: the first, the last, and the others evenly spaced between (reads 72 KiB of any payload).
/// `sampled` says which it is.
uint64_t payloadFingerprint(llvm::ArrayRef<uint8_t> payload, bool full, bool &sampled);

/// The payload bytes of `buffer` that the dump holds (zero-copy; may be shorter than its size).
llvm::ArrayRef<uint8_t> capturedPayload(const AddressSpace &memory, const Buffer &buffer);

/// Name of the walker or "region-scan" for a buffer.
llvm::StringRef bufferSource(const Analysis &analysis, const Buffer &buffer);

/// Groups `analysis.buffers` according to options.group_by (used by analyze; exposed for diff).
std::vector<SizeGroup> groupBuffers(const Analysis &analysis);

} // namespace dumpsift
