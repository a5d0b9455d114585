// Diffing reports (read back by the report layer, as `diff` reads them): group matching, findings
// matching, every threshold.
#include "compare/sample_reports.h"
#include "dumpsift/compare/diff.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The group of `diff` with this size and state (REQUIREs it).
const GroupDiff &groupOf(const ReportDiff &diff, uint64_t size, const std::string &state) {
  for (const GroupDiff &g : diff.groups)
    if (g.size == size && g.state == state)
      return g;
  FAIL("no group " << size << " " << state);
  return diff.groups.front();
}

/// The subjects of `regressions`, in order.
std::vector<std::string> subjects(const std::vector<Regression> &regressions) {
  std::vector<std::string> out;
  for (const Regression &r : regressions)
    out.push_back(r.subject);
  return out;
}

} // namespace

TEST_CASE("diff: the same report twice changes nothing") {
  ReportDiff d = diffOf(baseReport(), baseReport());
  CHECK(d.buffer_bytes.delta() == 0);
  for (const GroupDiff &g : d.groups)
    CHECK(g.status == GroupStatus::Unchanged);
  CHECK(d.new_findings.empty());
  CHECK(d.gone_findings.empty());
  CHECK(d.warnings.empty());
  DiffLimits strict;
  strict.max_growth_percent = 0;
  strict.max_growth_bytes = 0;
  strict.max_new_bytes = 0;
  strict.max_new_findings = 0;
  CHECK(findRegressions(d, strict).empty());
}

TEST_CASE("diff: new, vanished and changed groups, kinds and totals") {
  Json after = sampleReport({{135152, "used", {{"jpeg", 6}, {"aws-chunked", 1}}},
                             {131186, "used", {{"aws-chunked", 2}}},
                             {100136, "free", {{"unknown", 1}}}});
  ReportDiff d = diffOf(baseReport(), after);
  CHECK(d.buffers.before == 7);
  CHECK(d.buffers.after == 10);
  CHECK(groupOf(d, 131186, "used").status == GroupStatus::New);
  CHECK(groupOf(d, 131186, "used").count.after == 2);
  CHECK(groupOf(d, 266224, "used").status == GroupStatus::Vanished);
  CHECK(groupOf(d, 266224, "used").bytes.before == 532448);
  CHECK(groupOf(d, 135152, "used").status == GroupStatus::Changed);
  CHECK(groupOf(d, 135152, "used").count.delta() == 3);
  CHECK(groupOf(d, 100136, "free").status == GroupStatus::Unchanged);
  // Ordered by the size of the change in bytes.
  REQUIRE(d.groups.size() == 4);
  CHECK(d.groups[0].size == 266224); // -532,448
  CHECK(d.groups[1].size == 135152); // +405,456
  CHECK(d.groups[2].size == 131186); // +262,372
  CHECK(d.groups[3].size == 100136); // 0
  // Kinds by name, both sides.
  REQUIRE(d.kinds.size() == 4);
  CHECK(d.kinds[0].kind == "aws-chunked");
  CHECK(d.kinds[0].count.before == 1);
  CHECK(d.kinds[0].count.after == 3);
  CHECK(d.kinds[3].kind == "zero");
  CHECK(d.kinds[3].bytes.after == 0);
}

TEST_CASE("diff: groups of the same size but another state or kind are different groups") {
  Json before = sampleReport({{135152, "used", {{"jpeg", 1}}}});
  Json after = sampleReport({{135152, "free", {{"jpeg", 1}}}});
  ReportDiff d = diffOf(before, after);
  CHECK(groupOf(d, 135152, "used").status == GroupStatus::Vanished);
  CHECK(groupOf(d, 135152, "free").status == GroupStatus::New);

  before["groups"][0]["kind"] = "jpeg";
  after = before;
  after["groups"][0]["kind"] = "png";
  d = diffOf(before, after);
  REQUIRE(d.groups.size() == 2);
  CHECK(d.groups[0].kind != d.groups[1].kind);
}

TEST_CASE("diff: findings match on type and figures, not on addresses or explanation") {
  Json after = baseReport();
  after["findings"][0]["explanation"] = "worded differently";
  after["findings"][0]["addresses"] = Json::array({"0x1000"});
  after["findings"].push_back(Json{{"type", "duplicates"},
                                   {"bytes", 270304},
                                   {"count", 3},
                                   {"size", 135152},
                                   {"explanation", "three copies"}});
  after["findings"].erase(1); // zero-filled gone
  ReportDiff d = diffOf(baseReport(), after);
  REQUIRE(d.new_findings.size() == 1);
  CHECK(d.new_findings[0].explanation == "three copies");
  REQUIRE(d.gone_findings.size() == 1);
  CHECK(d.gone_findings[0].type == "zero-filled");
  REQUIRE(d.finding_types.size() == 2);
  CHECK(d.finding_types[0].type == "duplicates");
  CHECK(d.finding_types[0].count.after == 2);

  // Two equal findings on one side, one on the other: one is new.
  Json twice = baseReport();
  twice["findings"].push_back(twice["findings"][0]);
  d = diffOf(baseReport(), twice);
  CHECK(d.new_findings.size() == 1);
  CHECK(d.gone_findings.empty());
  d = diffOf(twice, baseReport());
  CHECK(d.new_findings.empty());
  CHECK(d.gone_findings.size() == 1);
}

TEST_CASE("diff: reports made with different options get a warning") {
  Json after = baseReport();
  after["options"]["min_size"] = 131072;
  ReportDiff d = diffOf(baseReport(), after);
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].find("min_size (65536 vs 131072)") != std::string::npos);

  // The holders pass changes no figure compared: a report made with it and one made without (as
  // diff makes from a dump) are compared without a warning.
  Json with_holders = baseReport(), without = baseReport();
  with_holders["options"]["holders"] = "chains";
  without["options"]["holders"] = "none";
  CHECK(diffOf(with_holders, without).warnings.empty());
  without["options"].erase("holders");
  CHECK(diffOf(without, with_holders).warnings.empty());
}

TEST_CASE("diff thresholds: --max-growth as a percentage") {
  // jpeg 3 -> 4 buffers of 135,152: +33.3% for the kind, +25% for the group, +11.5% in total.
  Json after = sampleReport({{135152, "used", {{"jpeg", 4}, {"aws-chunked", 1}}},
                             {266224, "used", {{"zero", 2}}},
                             {100136, "free", {{"unknown", 1}}}});
  ReportDiff d = diffOf(baseReport(), after);
  DiffLimits limits;
  limits.max_growth_percent = 30;
  std::vector<Regression> r = findRegressions(d, limits);
  CHECK(subjects(r) == std::vector<std::string>{"kind jpeg"});
  CHECK(r[0].message ==
        "kind jpeg: bytes grew +33.3% (405,456 -> 540,608), limit --max-growth 30%");
  CHECK(r[0].measured == Approx(100.0 / 3));
  limits.max_growth_percent = 10;
  CHECK(subjects(findRegressions(d, limits)) ==
        std::vector<std::string>{"total buffer bytes", "kind jpeg", "group 135,152 used"});
  limits.max_growth_percent = 34;
  CHECK(findRegressions(d, limits).empty());
  // Shrinking never regresses.
  limits.max_growth_percent = 0;
  CHECK(findRegressions(diffOf(after, baseReport()), limits).empty());
}

TEST_CASE("diff thresholds: --max-growth in bytes counts new kinds and groups too") {
  Json after = sampleReport({{135152, "used", {{"jpeg", 3}, {"aws-chunked", 1}}},
                             {266224, "used", {{"zero", 2}}},
                             {100136, "free", {{"unknown", 1}}},
                             {70000, "used", {{"png", 1}}}});
  ReportDiff d = diffOf(baseReport(), after);
  DiffLimits limits;
  limits.max_growth_bytes = 69999;
  std::vector<Regression> r = findRegressions(d, limits);
  CHECK(subjects(r) ==
        std::vector<std::string>{"total buffer bytes", "kind png", "group 70,000 used"});
  CHECK(r[0].message == "total buffer bytes: bytes grew by 70,000 (1,173,192 -> 1,243,192), "
                        "limit --max-growth 69,999 bytes");
  limits.max_growth_bytes = 70000;
  CHECK(findRegressions(d, limits).empty());
}

TEST_CASE("diff thresholds: --max-new-bytes for new groups and new kinds") {
  Json after = sampleReport({{135152, "used", {{"jpeg", 3}, {"aws-chunked", 1}}},
                             {266224, "used", {{"zero", 2}}},
                             {100136, "free", {{"unknown", 1}}},
                             {131186, "used", {{"aws-chunked", 2}}}});
  ReportDiff d = diffOf(baseReport(), after);
  DiffLimits limits;
  limits.max_new_bytes = 0;
  std::vector<Regression> r = findRegressions(d, limits);
  REQUIRE(subjects(r) == std::vector<std::string>{"new groups"});
  CHECK(r[0].message == "new groups: 1 new size group (131,186 used x2) holds 262,372 bytes, "
                        "limit --max-new-bytes 0");
  limits.max_new_bytes = 262372;
  CHECK(findRegressions(d, limits).empty());

  // A kind new in `after`, in a group that already existed.
  Json png = baseReport();
  png = sampleReport({{135152, "used", {{"jpeg", 3}, {"png", 1}}},
                      {266224, "used", {{"zero", 2}}},
                      {100136, "free", {{"unknown", 1}}}});
  limits.max_new_bytes = 0;
  r = findRegressions(diffOf(baseReport(), png), limits);
  CHECK(subjects(r) == std::vector<std::string>{"new kind png"});
}

TEST_CASE("diff thresholds: --max-new-findings") {
  Json after = baseReport();
  after["findings"].push_back(Json{{"type", "growth-chain"}, {"bytes", 5}, {"count", 3}});
  ReportDiff d = diffOf(baseReport(), after);
  DiffLimits limits;
  limits.max_new_findings = 0;
  std::vector<Regression> r = findRegressions(d, limits);
  REQUIRE(r.size() == 1);
  CHECK(r[0].message == "new findings: 1 (growth-chain), limit --max-new-findings 0");
  limits.max_new_findings = 1;
  CHECK(findRegressions(d, limits).empty());
}
