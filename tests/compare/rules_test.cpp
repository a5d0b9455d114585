// Rules files (`dumpsift check`): every rule type measured on a hand-made report, both outcomes,
// the output formats, and bad rule files with the field and line they name.
#include "compare/sample_reports.h"
#include "dumpsift/compare/rules.h"

#include <catch2/catch.hpp>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// A rules file holding the one rule `rule` (a JSON object's text).
std::string oneRule(const std::string &rule) {
  return "{\"version\": 1, \"rules\": [" + rule + "]}";
}

/// The single result of checking `report` against a file holding `rule`.
RuleResult checkOne(const Json &report, const std::string &rule, RuleSet &storage) {
  storage = mustParse(oneRule(rule));
  std::vector<RuleResult> results = checkRules(figuresOf(report), storage);
  REQUIRE(results.size() == 1);
  return results.front();
}

/// The error parseRules gives for `text` (REQUIREs one).
std::string ruleError(const std::string &text) {
  auto rules = parseRules(text);
  INFO(text);
  REQUIRE(!rules);
  return llvm::toString(rules.takeError());
}

} // namespace

// baseReport(): 135,152 used x4 (jpeg 3, aws-chunked 1), 266,224 used x2 (zero), 100,136 free x1
// (unknown); findings duplicates (135,152 bytes) and zero-filled (532,448 bytes).

TEST_CASE("kind rules limit the bytes and the count of one kind") {
  RuleSet set;
  RuleResult r =
      checkOne(baseReport(), R"({"name": "jpeg", "kind": "jpeg", "max_bytes": 405456})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 3);
  CHECK(r.measured.bytes == 405456);

  r = checkOne(baseReport(), R"({"name": "jpeg", "kind": "jpeg", "max_bytes": 405455})", set);
  CHECK_FALSE(r.passed);
  CHECK(r.message == "bytes 405,456 (396.0 KiB) > max_bytes 405,455 (396.0 KiB)");

  r = checkOne(baseReport(), R"({"name": "zeros", "kind": "zero", "max_count": 1})", set);
  CHECK_FALSE(r.passed);
  CHECK(r.message == "count 2 > max_count 1");

  // A kind the report does not hold measures zero.
  r = checkOne(baseReport(), R"({"name": "png", "kind": "png", "max_count": 0})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 0);
}

TEST_CASE("size range rules add up the groups in the range, optionally by kind and state") {
  RuleSet set;
  RuleResult r =
      checkOne(baseReport(),
               R"({"name": "mid", "min_size": "128K", "max_size": "256K", "max_count": 4})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 4); // only the 135,152-byte group
  CHECK(r.measured.bytes == 4 * 135152);
  CHECK(set.rules[0].subject() == "sizes 131,072..262,144");

  r = checkOne(baseReport(), R"({"name": "big", "min_size": 200000, "max_bytes": "512K"})", set);
  CHECK_FALSE(r.passed); // 2 x 266,224 = 532,448 > 524,288
  CHECK(r.measured.bytes == 532448);
  CHECK(set.rules[0].subject() == "sizes >= 200,000");

  r = checkOne(baseReport(), R"({"name": "small", "max_size": 135152, "max_count": 5})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 5); // 135,152 x4 and 100,136 x1: both bounds are inclusive

  // Kind within a size range: the kind's count in each group times the group's size.
  r = checkOne(baseReport(),
               R"({"name": "chunks", "kind": "aws-chunked", "min_size": 100000, "max_bytes": 1})",
               set);
  CHECK_FALSE(r.passed);
  CHECK(r.measured.count == 1);
  CHECK(r.measured.bytes == 135152);

  // State alone, and state within a range.
  r = checkOne(baseReport(), R"({"name": "free", "state": "free", "max_bytes": 100136})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 1);
  r = checkOne(baseReport(),
               R"({"name": "used-big", "state": "used", "min_size": 200000, "max_count": 1})", set);
  CHECK_FALSE(r.passed);
  CHECK(r.measured.count == 2);
  CHECK(set.rules[0].subject() == "sizes >= 200,000, state used");
}

TEST_CASE("finding rules count the findings of one type and add up their bytes") {
  Json report = baseReport();
  report["findings"].push_back(
      Json{{"type", "duplicates"}, {"bytes", 1000}, {"addresses", Json::array()}});
  RuleSet set;
  RuleResult r =
      checkOne(report, R"({"name": "dups", "finding": "duplicates", "max_count": 2})", set);
  CHECK(r.passed);
  CHECK(r.measured.count == 2);
  CHECK(r.measured.bytes == 136152);
  r = checkOne(report, R"({"name": "dups", "finding": "duplicates", "max_bytes": "128K"})", set);
  CHECK_FALSE(r.passed);
  CHECK(set.rules[0].subject() == "finding duplicates");
}

TEST_CASE("all_buffers rules limit every buffer of the report") {
  RuleSet set;
  RuleResult r = checkOne(baseReport(),
                          R"({"name": "all", "all_buffers": true, "max_bytes": 1173192,
                              "max_count": 7})",
                          set);
  CHECK(r.passed);
  CHECK(r.measured.count == 7);
  CHECK(r.measured.bytes == 4 * 135152 + 2 * 266224 + 100136);
  r = checkOne(baseReport(), R"({"name": "all", "all_buffers": true, "max_bytes": "1M"})", set);
  CHECK_FALSE(r.passed);
  CHECK(set.rules[0].subject() == "all buffers");
}

TEST_CASE("must_not_exist rules: an exact size group, a kind, a finding type") {
  RuleSet set;
  RuleResult r = checkOne(baseReport(),
                          R"({"name": "no-131186", "size": 131186, "must_not_exist": true})", set);
  CHECK(r.passed);
  CHECK(r.message == "none found (must not exist)");
  CHECK(set.rules[0].subject() == "size 131,186");

  Json regressed = sampleReport({{131186, "used", {{"aws-chunked", 2}}}});
  r = checkOne(regressed, R"({"name": "no-131186", "size": 131186, "must_not_exist": true})", set);
  CHECK_FALSE(r.passed);
  CHECK(r.message == "found 2 buffers, 262,372 bytes (256.2 KiB), must not exist");

  r = checkOne(baseReport(), R"({"name": "no-zip", "kind": "zip", "must_not_exist": true})", set);
  CHECK(r.passed);
  r = checkOne(baseReport(), R"({"name": "no-zeros", "kind": "zero", "must_not_exist": true})",
               set);
  CHECK_FALSE(r.passed);

  r = checkOne(baseReport(),
               R"({"name": "no-growth", "finding": "growth-chain", "must_not_exist": true})", set);
  CHECK(r.passed);
  r = checkOne(baseReport(),
               R"({"name": "no-zero-filled", "finding": "zero-filled", "must_not_exist": true})",
               set);
  CHECK_FALSE(r.passed);
  CHECK(r.message == "found 1 finding, 532,448 bytes (520.0 KiB), must not exist");
}

TEST_CASE("a rule with both limits reports every limit it exceeds on one line") {
  RuleSet set;
  RuleResult r = checkOne(
      baseReport(), R"({"name": "jpeg", "kind": "jpeg", "max_bytes": 1, "max_count": 1})", set);
  CHECK_FALSE(r.passed);
  CHECK(r.message == "bytes 405,456 (396.0 KiB) > max_bytes 1 (1 B); count 3 > max_count 1");
  r = checkOne(baseReport(),
               R"({"name": "jpeg", "kind": "jpeg", "max_bytes": "1M", "max_count": 1})", set);
  CHECK(r.message == "count 3 > max_count 1"); // only the limit exceeded
}

TEST_CASE("the rules file: sizes as numbers or K/M/G strings, descriptions, file order") {
  RuleSet set = mustParse(R"({
    "version": 1,
    "description": "limits for the uploader",
    "rules": [
      {"name": "b", "description": "why", "kind": "png", "max_bytes": "0x100"},
      {"name": "a", "size": "1G", "max_count": 3}
    ]
  })");
  CHECK(set.description == "limits for the uploader");
  REQUIRE(set.rules.size() == 2);
  CHECK(set.rules[0].name == "b");
  CHECK(set.rules[0].description == "why");
  CHECK(set.rules[0].max_bytes == 256u);
  CHECK(set.rules[0].pointer == "/rules/0");
  CHECK(set.rules[1].min_size == (1ull << 30));
  CHECK(set.rules[1].max_size == (1ull << 30));
  CHECK(set.rules[1].max_count == 3u);
  CHECK_FALSE(set.rules[1].max_bytes);
}

TEST_CASE("bad rule files: JSON syntax errors give the line and column") {
  CHECK(
      ruleError("{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"x\" \"kind\": \"jpeg\"}\n"
                "  ]\n}\n")
          .rfind("line 4, column 23: syntax error while parsing object - unexpected string literal",
                 0) == 0);
  CHECK(ruleError("{\"version\": 1,\n \"rules\": [\n").rfind("line 3, column 1: ", 0) == 0);
  CHECK(ruleError("").rfind("line 1, column 1: ", 0) == 0);
  CHECK(ruleError("{\"version\": 1, \"rules\": []} trailing").rfind("line 1, column 31: ", 0) == 0);
}

TEST_CASE("bad rule files: the top level") {
  CHECK(ruleError("[1]") == "/: expected an object with \"version\" and \"rules\", got an array");
  CHECK(ruleError("{\"rules\": []}") == "/: missing \"version\" (this dumpsift reads version 1)");
  CHECK(ruleError("{\n\"version\": 2,\n\"rules\": []}") ==
        "/version (line 2): unsupported version 2 (this dumpsift reads version 1)");
  CHECK(ruleError("{\"version\": \"1\", \"rules\": []}") ==
        "/version (line 1): unsupported version \"1\" (this dumpsift reads version 1)");
  CHECK(ruleError("{\"version\": 1}") == "/: missing \"rules\" (a list of rules)");
  CHECK(ruleError("{\"version\": 1, \"rules\": {}}") ==
        "/rules (line 1): expected a list of rules, got an object");
  CHECK(ruleError("{\"version\": 1, \"rules\": []}") ==
        "/rules (line 1): no rules: give at least one");
  CHECK(ruleError("{\"version\": 1, \"rules\": [{\"name\": \"a\", \"kind\": \"png\", "
                  "\"max_count\": 1}],\n \"rule\": []}") ==
        "/rule (line 2): unknown field (known: version, description, allow_truncated_dump, "
        "rules)");
  CHECK(ruleError("{\"version\": 1, \"rules\": [3]}") ==
        "/rules/0 (line 1): expected a rule (an object), got a number");
}

TEST_CASE("bad rule files: each field names its JSON pointer and line") {
  // The rule sits on lines 4-7; each error names the field's own line.
  auto bad = [](const std::string &fields) {
    return ruleError("{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"r\",\n" + fields +
                     "\n    }\n  ]\n}\n");
  };
  CHECK(bad("     \"kind\": \"jpeg\", \"max_byte\": 5") ==
        "/rules/0/max_byte (line 5): unknown field (known: name, description, kind, size, "
        "min_size, max_size, state, finding, all_buffers, warnings, dump_truncated, max_bytes, "
        "max_count, must_not_exist)");
  CHECK(bad("     \"kind\": \"jpg\", \"max_bytes\": 5")
            .rfind("/rules/0/kind (line 5): unknown kind 'jpg' (known: jpeg, png,", 0) == 0);
  CHECK(bad("     \"state\": \"busy\", \"max_bytes\": 5") ==
        "/rules/0/state (line 5): unknown state 'busy' (known: used, free, unknown)");
  CHECK(bad("     \"kind\": \"jpeg\",\n     \"max_bytes\": \"ten\"") ==
        "/rules/0/max_bytes (line 6): 'ten' is not a size (e.g. 131186, \"64K\", \"10M\", "
        "\"1G\")");
  CHECK(bad("     \"kind\": \"jpeg\", \"max_bytes\": true") ==
        "/rules/0/max_bytes (line 5): expected a size (a number of bytes, or a string like "
        "\"10M\"), got a boolean");
  CHECK(bad("     \"kind\": \"jpeg\", \"max_count\": -1") ==
        "/rules/0/max_count (line 5): expected a count (a non-negative integer), got a negative "
        "number");
  CHECK(bad("     \"kind\": \"jpeg\", \"max_count\": 1.5") ==
        "/rules/0/max_count (line 5): expected a count (a non-negative integer), got a "
        "fractional number");
  CHECK(bad("     \"kind\": \"jpeg\", \"max_count\": \"3\"") ==
        "/rules/0/max_count (line 5): expected a count (a non-negative integer), got a string");
  CHECK(bad("     \"size\": 5, \"min_size\": 1, \"max_count\": 1") ==
        "/rules/0/size (line 5): give either size (one exact size) or min_size/max_size");
  CHECK(bad("     \"min_size\": \"2M\", \"max_size\": \"1M\", \"max_count\": 1") ==
        "/rules/0/max_size (line 5): smaller than min_size (2,097,152)");
  CHECK(bad("     \"finding\": \"duplicates\", \"kind\": \"jpeg\", \"max_count\": 1") ==
        "/rules/0/finding (line 5): a finding rule measures findings, not buffers: remove "
        "\"kind\" or make it two rules");
  CHECK(bad("     \"all_buffers\": true, \"state\": \"used\", \"max_count\": 1") ==
        "/rules/0/all_buffers (line 5): all_buffers measures every buffer: remove \"state\" or "
        "make it two rules");
  CHECK(bad("     \"all_buffers\": false, \"max_count\": 1") ==
        "/rules/0/all_buffers (line 5): only true is meaningful here; remove the field instead");
  CHECK(bad("     \"max_count\": 1") ==
        "/rules/0 (line 4): does not say what to measure: give kind, size, min_size, max_size or "
        "state (buffers), finding (a finding type), all_buffers, warnings, or dump_truncated");
  CHECK(bad("     \"kind\": \"jpeg\"") ==
        "/rules/0 (line 4): no limit: give max_bytes, max_count or must_not_exist");
  CHECK(bad("     \"kind\": \"jpeg\", \"max_bytes\": 1, \"must_not_exist\": true") ==
        "/rules/0/must_not_exist (line 5): cannot be combined with max_bytes (must_not_exist "
        "already means a count of 0)");
  CHECK(bad("     \"kind\": \"jpeg\", \"must_not_exist\": \"yes\"") ==
        "/rules/0/must_not_exist (line 5): expected true, got a string");
  CHECK(bad("     \"finding\": \"\", \"max_count\": 1") ==
        "/rules/0/finding (line 5): must not be empty");
}

TEST_CASE("bad rule files: names are required and unique") {
  CHECK(ruleError("{\"version\": 1, \"rules\": [{\"kind\": \"png\", \"max_count\": 1}]}") ==
        "/rules/0 (line 1): missing \"name\"");
  CHECK(ruleError("{\"version\": 1, \"rules\": [{\"name\": 7, \"kind\": \"png\", \"max_count\": "
                  "1}]}") == "/rules/0/name (line 1): expected a string, got a number");
  CHECK(ruleError("{\"version\": 1, \"rules\": [\n"
                  "  {\"name\": \"a\", \"kind\": \"png\", \"max_count\": 1},\n"
                  "  {\"name\": \"a\", \"kind\": \"gif\", \"max_count\": 1}]}") ==
        "/rules/1/name (line 3): duplicate rule name 'a' (also /rules/0)");
}
