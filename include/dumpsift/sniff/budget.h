// The work budget of sniffing's expensive step: bytes inflated by the gzip and zlib sniffers.
// Each candidate has its own limit (4 MiB of output); a SniffBudget bounds the sum over many
// candidates, so that a region of back-to-back decompression bombs costs a fixed amount of work.
#pragma once

#include <cstdint>

namespace dumpsift {

/// Bytes of inflated output that validate() and sniff() may produce on the thread where the budget
/// is in use (SniffBudget::Use); with none in use, only each candidate's own limit holds. A
/// candidate gets what is left, up to its own limit: one that needed more stops early (its status
/// "budget"), one that gets nothing is not confirmed (validate returns nullopt). Not thread-safe:
/// one thread draws on a budget at a time, in an order its owner fixes, so what is found never
/// depends on thread timing.
class SniffBudget {
public:
  explicit SniffBudget(uint64_t inflate_bytes) : remaining_(inflate_bytes) {}

  /// Output one candidate whose own limit is `own_limit` may produce now.
  uint64_t inflateAllowance(uint64_t own_limit) const {
    return own_limit < remaining_ ? own_limit : remaining_;
  }
  /// Records `produced` bytes of output; `cut`: the candidate stopped (or was refused) because
  /// this budget, not its own limit, ran out.
  void spendInflate(uint64_t produced, bool cut) {
    remaining_ -= produced < remaining_ ? produced : remaining_;
    cut_candidates_ += cut;
  }
  uint64_t inflateRemaining() const { return remaining_; }
  /// Candidates this budget cut short or refused so far.
  uint64_t cutCandidates() const { return cut_candidates_; }

  /// The budget the calling thread's sniffers draw on, or nullptr.
  static SniffBudget *current();

  /// Puts `budget` in use on the calling thread for the scope's lifetime (scopes nest).
  class Use {
  public:
    explicit Use(SniffBudget &budget);
    ~Use();
    Use(const Use &) = delete;
    Use &operator=(const Use &) = delete;

  private:
    SniffBudget *previous_;
  };

private:
  uint64_t remaining_;
  uint64_t cut_candidates_ = 0;
};

} // namespace dumpsift
