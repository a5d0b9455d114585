// What `diff` and `check` print (comparison.h): the diff as JSON and text, and the results of a
// rules file as text, GitHub annotations and JSON, over hand-made reports.
#include "compare/sample_reports.h"
#include "dumpsift/report/comparison.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("diff output: JSON and text") {
  Json after = sampleReport({{135152, "used", {{"jpeg", 6}, {"aws-chunked", 1}}},
                             {131186, "used", {{"aws-chunked", 2}}},
                             {100136, "free", {{"unknown", 1}}}});
  ReportDiff d = diffOf(baseReport(), after);
  DiffLimits limits;
  limits.max_new_bytes = 0;
  std::vector<Regression> r = findRegressions(d, limits);

  std::string json_text;
  llvm::raw_string_ostream json(json_text);
  writeDiffJson(d, r, "base.json", "new.json", json);
  Json j = Json::parse(json.str());
  CHECK(j["before"] == "base.json");
  CHECK(j["totals"]["buffers"] == Json{{"before", 7}, {"after", 10}, {"delta", 3}});
  CHECK(j["groups"][0]["status"] == "vanished");
  CHECK(j["groups"][0]["bytes"]["delta"] == -532448);
  CHECK(j["groups"][2]["status"] == "new");
  CHECK(j["regressed"] == true);
  CHECK(j["regressions"][0]["subject"] == "new groups");
  CHECK(j["regressions"][0]["measured"] == 262372.0);
  std::string again_text;
  llvm::raw_string_ostream again(again_text);
  writeDiffJson(d, r, "base.json", "new.json", again);
  CHECK(again.str() == json.str()); // deterministic

  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeDiffText(d, r, "base.json", "new.json", DiffTextOptions{}, text);
  std::string s = text.str();
  INFO(s);
  CHECK(s.rfind("dumpsift diff: base.json -> new.json\n", 0) == 0);
  CHECK(s.find("  buffers       7 -> 10 (+3)\n") != std::string::npos);
  CHECK(s.find("  buffer bytes  1,173,192 -> 1,308,572 (+135,380, +11.5%)\n") != std::string::npos);
  CHECK(s.find("  jpeg         3 -> 6 (+3)           405,456 -> 810,912 (+405,456, +100.0%)\n") !=
        std::string::npos);
  CHECK(s.find("  new       131,186 used") != std::string::npos);
  CHECK(s.find("  vanished  266,224 used") != std::string::npos);
  CHECK(s.find("(1 group unchanged)") != std::string::npos);
  CHECK(s.find("REGRESSION new groups: 1 new size group (131,186 used x2) holds 262,372 bytes") !=
        std::string::npos);
  CHECK(s.find("dumpsift diff: 1 regression\n") != std::string::npos);

  // --top limits the changed groups shown.
  std::string top_text;
  llvm::raw_string_ostream top(top_text);
  writeDiffText(d, r, "a", "b", DiffTextOptions{1, false}, top);
  CHECK(top.str().find("(2 more changed; --top 0 shows all)") != std::string::npos);
}

TEST_CASE("check output: text lines, GitHub annotations, JSON") {
  std::string text = "{\n"
                     "  \"version\": 1,\n"
                     "  \"rules\": [\n"
                     "    {\"name\": \"jpeg\", \"kind\": \"jpeg\", \"max_bytes\": \"64K\"},\n"
                     "    {\"name\": \"zeros\", \"kind\": \"zero\", \"max_bytes\": \"10M\"}\n"
                     "  ]\n"
                     "}\n";
  RuleSet set = mustParse(text);
  CHECK(set.rules[0].line == 4);
  CHECK(set.rules[1].line == 5);
  std::vector<RuleResult> results = checkRules(figuresOf(baseReport()), set);

  CheckOutput output{"run.json", "ci/rules.json", CheckFormat::Text, false};
  std::string plain_text;
  llvm::raw_string_ostream plain(plain_text);
  writeCheckResults(results, output, plain);
  CHECK(plain.str() == "FAIL jpeg [kind jpeg]: bytes 405,456 (396.0 KiB) > max_bytes 65,536 "
                       "(64.0 KiB)\n"
                       "dumpsift check: 1 of 2 rules failed (run.json, rules ci/rules.json)\n");

  output.verbose = true;
  std::string verbose_text;
  llvm::raw_string_ostream verbose(verbose_text);
  writeCheckResults(results, output, verbose);
  CHECK(verbose.str().find("PASS zeros [kind zero]: bytes 532,448 (520.0 KiB) <= max_bytes "
                           "10,485,760 (10.0 MiB)\n") != std::string::npos);

  output.format = CheckFormat::Github;
  output.verbose = false;
  output.rules_path = "ci/rules,v1.json";
  std::string github_text;
  llvm::raw_string_ostream github(github_text);
  writeCheckResults(results, output, github);
  CHECK(github.str() ==
        "::error file=ci/rules%2Cv1.json,line=4,title=dumpsift check%3A jpeg::[kind jpeg] bytes "
        "405,456 (396.0 KiB) > max_bytes 65,536 (64.0 KiB) in run.json\n"
        "dumpsift check: 1 of 2 rules failed (run.json, rules ci/rules,v1.json)\n");

  output.format = CheckFormat::Json;
  std::string json_text;
  llvm::raw_string_ostream json(json_text);
  writeCheckResults(results, output, json);
  Json j = Json::parse(json.str());
  CHECK(j["passed"] == false);
  CHECK(j["failed"] == 1);
  REQUIRE(j["rules"].size() == 2);
  CHECK(j["rules"][0]["name"] == "jpeg");
  CHECK(j["rules"][0]["line"] == 4);
  CHECK(j["rules"][0]["bytes"] == 405456);
  CHECK(j["rules"][0]["max_bytes"] == 65536);
  CHECK(j["rules"][0]["passed"] == false);
  CHECK(j["rules"][1]["passed"] == true);
}
