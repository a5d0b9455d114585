// The run's inflate budget (AnalyzeOptions::inflate_budget, SniffBudget): a live process holds
// gzip members that each inflate to 1 MiB, in malloc buffers and back to back in a pool of its own
// (fixtures/programs/gzip_members.c, dumped with gcore). With the default budget every member is
// inflated whole; with a small one the budget runs out at a member the test knows in advance, the
// report says where, the members after it are not taken for streams of their own, and the results
// do not depend on the number of threads.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/support/hex.h"
#include "support/dumps.h"
#include "support/heap_walk.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

struct Member {
  uint64_t address, size, inflated;
  bool pooled;
  uint64_t twins; // the address of the member it is a copy of, else its own
};

/// The members gzip_members printed, in address order.
std::vector<Member> membersOf(const LiveProcess &proc) {
  std::vector<Member> members;
  for (const nlohmann::json &m : proc.manifest()) {
    const uint64_t address = *parseHexAddress(m["address"].get<std::string>());
    const uint64_t twins =
        m["copy_of"].is_null() ? address : *parseHexAddress(m["copy_of"].get<std::string>());
    members.push_back({address, m["size"], m["inflated"], m["place"] == "pool", twins});
  }
  std::sort(members.begin(), members.end(),
            [](const Member &a, const Member &b) { return a.address < b.address; });
  return members;
}

/// One dump of gzip_members for every test case (gcore takes a second).
const Snapshot *gzipMembersDump(std::vector<Member> &members) {
  static std::unique_ptr<LiveProcess> proc;
  static std::unique_ptr<Snapshot> snap;
  if (!snap) {
    proc = std::make_unique<LiveProcess>(fixtureProgram("gzip_members"));
    snap = dumpLive(*proc, "inflate_budget");
  }
  members = membersOf(*proc);
  return snap.get();
}

std::map<uint64_t, const Buffer *> byAddress(const Analysis &analysis) {
  std::map<uint64_t, const Buffer *> found;
  for (const Buffer &b : analysis.buffers)
    found[b.allocation.address] = &b;
  return found;
}

/// The buffer whose payload starts at `address` (a malloc buffer's, a region-scan hit's), or null.
const Buffer *payloadAt(const Analysis &analysis, uint64_t address) {
  for (const Buffer &b : analysis.buffers)
    if (b.payloadAddress() == address)
      return &b;
  return nullptr;
}

std::string status(const Buffer &b) {
  return std::get<std::string>(*b.content.details.get("status"));
}

uint64_t inflated(const Buffer &b) {
  return std::get<uint64_t>(*b.content.details.get("uncompressed_bytes"));
}

/// Every buffer's address, kind and details: what a report says of them.
std::string contentOf(const Analysis &analysis) {
  std::string out;
  for (const Buffer &b : analysis.buffers) {
    out += hexAddress(b.allocation.address) + " " + std::to_string(b.allocation.size) + " " +
           std::string(kindName(b.content.kind));
    for (const auto &[key, value] : b.content.details.entries)
      if (const auto *n = std::get_if<uint64_t>(&value))
        out += " " + key + "=" + std::to_string(*n);
      else if (const auto *s = std::get_if<std::string>(&value))
        out += " " + key + "=" + *s;
    out += "\n";
  }
  return out;
}

constexpr uint64_t kMiB = 1 << 20;

} // namespace

TEST_CASE("inflate budget: the default one inflates every member whole", "[live]") {
  if (!gcoreOrSkipped())
    return;
  std::vector<Member> members;
  AddressSpace memory(*gzipMembersDump(members));
  REQUIRE(members.size() == 13);
  AnalyzeOptions options;
  Analysis analysis = analyze(memory, options);
  for (const Member &m : members) {
    INFO(hexAddress(m.address) << (m.pooled ? " pool" : " malloc"));
    // A malloc buffer's payload starts at the member; the region scan's hit is the member.
    const Buffer *b = payloadAt(analysis, m.address);
    REQUIRE(b != nullptr);
    CHECK(b->content.kind == ContentKind::Gzip);
    CHECK(status(*b) == "complete");
    CHECK(inflated(*b) == m.inflated);
    CHECK((b->source == kRegionScan) == m.pooled);
    if (m.pooled)
      CHECK(b->allocation.size == m.size);
  }
  CHECK_FALSE(anyWarningHas(analysis.diagnostics.warnings(), "inflate budget"));
}

TEST_CASE("inflate budget: the region scan's runs out at a known member, and says where",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  std::vector<Member> members;
  AddressSpace memory(*gzipMembersDump(members));
  std::vector<Member> pool;
  for (const Member &m : members)
    if (m.pooled)
      pool.push_back(m);
  REQUIRE(pool.size() == 8);
  AnalyzeOptions options;
  options.inflate_budget = 3 * kMiB + kMiB / 2; // the fourth member gets half of what it needs
  options.threads = 1;
  Analysis analysis = analyze(memory, options);
  auto found = byAddress(analysis);
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(found.count(pool[i].address));
    CHECK(status(*found[pool[i].address]) == "complete");
    CHECK(found[pool[i].address]->allocation.size == pool[i].size);
  }
  REQUIRE(found.count(pool[3].address));
  const Buffer &cut = *found[pool[3].address];
  CHECK(status(cut) == "budget");
  CHECK(inflated(cut) == kMiB / 2);
  // Once the budget is spent the members after it are not confirmed: no hit of their own.
  for (size_t i = 4; i < pool.size(); ++i)
    CHECK(found.count(pool[i].address) == 0);
  const auto warnings = analysis.diagnostics.warnings();
  const auto scan = std::find_if(warnings.begin(), warnings.end(),
                                 [](const Diagnostic &d) { return d.where == "region scan"; });
  REQUIRE(scan != warnings.end());
  INFO(scan->message);
  CHECK(scan->message.find("inflate budget (3.5 MiB of output)") != std::string::npos);
  // The range named holds the member where the budget ran out.
  const size_t at = scan->message.find("range at ");
  REQUIRE(at != std::string::npos);
  const std::string rest = scan->message.substr(at + 9);
  const auto range = parseHexAddress(rest.substr(0, rest.find(' ')));
  REQUIRE(range);
  const Region *region = memory.regionContaining(pool[3].address);
  REQUIRE(region != nullptr);
  CHECK(*range >= region->start);
  CHECK(*range <= pool[3].address);
  // Nothing was left for the malloc buffers: each keeps its first sniff's share.
  for (const Member &m : members)
    if (!m.pooled) {
      const Buffer *b = payloadAt(analysis, m.address);
      REQUIRE(b != nullptr);
      CHECK(status(*b) == "budget");
      CHECK(inflated(*b) == kFirstPassInflate);
    }
}

TEST_CASE("inflate budget: the buffers' second sniff runs out at a known buffer, whatever the "
          "threads",
          "[live]") {
  if (!gcoreOrSkipped())
    return;
  std::vector<Member> members;
  AddressSpace memory(*gzipMembersDump(members));
  std::vector<Member> heap;
  for (const Member &m : members)
    if (!m.pooled)
      heap.push_back(m);
  REQUIRE(heap.size() == 5);
  AnalyzeOptions options;
  options.region_scan = false;
  options.inflate_budget = 2 * kMiB + kMiB / 2;
  options.threads = 1;
  Analysis one = analyze(memory, options);
  options.threads = 4;
  Analysis four = analyze(memory, options);
  CHECK(contentOf(one) == contentOf(four));

  // In address order, each member not inflated before (a copy's twin may have been) takes its
  // 1 MiB while the budget lasts; the first that gets less, and every new one after it, keeps its
  // first sniff's share.
  std::set<uint64_t> inflated_whole; // Member::twins
  uint64_t remaining = options.inflate_budget;
  std::optional<uint64_t> ran_out_at;
  uint64_t left = 0;
  for (const Member &m : heap) {
    INFO(hexAddress(m.address));
    const Buffer *b = payloadAt(one, m.address);
    REQUIRE(b != nullptr);
    CHECK(b->content.kind == ContentKind::Gzip);
    bool whole = inflated_whole.count(m.twins) != 0;
    if (!whole && !ran_out_at && remaining >= m.inflated) {
      remaining -= m.inflated;
      inflated_whole.insert(m.twins);
      whole = true;
    } else if (!whole) {
      left += ran_out_at.has_value();
      if (!ran_out_at)
        ran_out_at = m.address;
    }
    CHECK(status(*b) == (whole ? "complete" : "budget"));
    CHECK(inflated(*b) == (whole ? m.inflated : kFirstPassInflate));
  }
  REQUIRE(ran_out_at);
  CHECK(anyWarningHas(one.diagnostics.warnings(),
                      hexAddress(*ran_out_at) +
                          ": the run's inflate budget (2.5 MiB of output) ran out at this buffer: "
                          "it and " +
                          std::to_string(left) + " later buffers"));
}
