// A saved report read back (saved_report.h): the figures diff and check read.
#include "compare/sample_reports.h"
#include "dumpsift/report/saved_report.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("readReport takes out totals, kinds, groups and findings") {
  ReportFigures f = figuresOf(baseReport());
  CHECK(f.buffers.count == 7);
  CHECK(f.buffers.bytes == 4 * 135152 + 2 * 266224 + 100136);
  CHECK(f.by_kind.at("jpeg").count == 3);
  CHECK(f.by_kind.at("jpeg").bytes == 3 * 135152);
  REQUIRE(f.groups.size() == 3);
  CHECK(f.groups[0].size == 135152);
  CHECK(f.groups[0].kinds.size() == 2);
  CHECK(f.groups[2].state == "free");
  REQUIRE(f.findings.size() == 2);
  CHECK(f.findings[0].type == "duplicates");
  CHECK(f.findings[0].numbers ==
        std::vector<std::pair<std::string, uint64_t>>{{"count", 2}, {"size", 135152}});
  CHECK(f.dump_path == "sample.core");
}

TEST_CASE("readReport names the field that is missing or wrong") {
  Json r = baseReport();
  r["schema_version"] = 3;
  CHECK(errorOf(readReport(r.dump())) ==
        "/schema_version: this dumpsift reads report schema versions "
        "1 to 2, not 3");
  CHECK(errorOf(readReport(Json::array().dump())) == "not a JSON report (a JSON object)");
  CHECK(errorOf(readReport(" \n")) == "not a JSON report (a JSON object)");
  CHECK(errorOf(readReport("{\"schema_version\": 2,")).rfind("line 1, column ", 0) == 0);
  r = baseReport();
  r.erase("summary");
  CHECK(errorOf(readReport(r.dump())) == "/summary: missing");
  r = baseReport();
  r["groups"][1]["count"] = -3;
  CHECK(errorOf(readReport(r.dump())) ==
        "/groups/1/count: expected a non-negative integer, got a negative number");
  r = baseReport();
  r["groups"][0]["state"] = 1;
  CHECK(errorOf(readReport(r.dump())) == "/groups/0/state: expected a string, got a number");
  r = baseReport();
  r["groups"][0]["kinds"]["jpeg"] = "three";
  CHECK(errorOf(readReport(r.dump())) ==
        "/groups/0/kinds/jpeg: expected a non-negative integer, got a string");
  r = baseReport();
  r["summary"]["by_kind"]["zero"].erase("bytes");
  CHECK(errorOf(readReport(r.dump())) == "/summary/by_kind/zero/bytes: missing");
  r = baseReport();
  r["findings"] = Json::object();
  CHECK(errorOf(readReport(r.dump())) == "/findings: expected an array, got an object");
  r = baseReport();
  r["findings"][1].erase("type");
  CHECK(errorOf(readReport(r.dump())) == "/findings/1/type: missing");
}

TEST_CASE("readReport accepts a report built in memory (signed integers)") {
  Json r = baseReport();
  r["schema_version"] = int64_t{1};
  r["summary"]["buffers"] = int64_t{7};
  r["groups"][0]["count"] = int{4};
  CHECK(figuresOf(r).buffers.count == 7);
}
