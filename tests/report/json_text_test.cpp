// The report layer's JSON reading (json_text.h), which its readers of saved reports and rules files
// share: syntax errors by line and column, JSON pointers, and the line of every value.
#include "../../src/report/json_text.h"
#include "compare/sample_reports.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("parseJsonText turns nlohmann's byte offset into line and column") {
  using namespace detail;
  CHECK(errorOf(parseJsonText("{\n  \"a\": 1,\n  \"b\" 2\n}")).rfind("line 3, column 7: ", 0) == 0);
  CHECK(lineAndColumn("ab\ncd", 0) == std::pair<size_t, size_t>{1, 1});
  CHECK(lineAndColumn("ab\ncd", 2) == std::pair<size_t, size_t>{1, 3}); // the newline itself
  CHECK(lineAndColumn("ab\ncd", 3) == std::pair<size_t, size_t>{2, 1});
  CHECK(lineAndColumn("ab\ncd", 99) == std::pair<size_t, size_t>{2, 3});
  CHECK(jsonPointerChild("/a", "b/c~d") == "/a/b~1c~0d");
  CHECK(jsonPointerChild("/rules", size_t{3}) == "/rules/3");
}

TEST_CASE("jsonPointerLines maps every value and member to its line") {
  std::string text = "{\n"
                     "  \"a\": [\n"
                     "    1,\n"
                     "    {\"b~/c\": \"x,]}\\\"\",\n"
                     "     \"d\": null}\n"
                     "  ],\n"
                     "  \"e\\u0041\": {}\n"
                     "}";
  std::map<std::string, size_t> lines = detail::jsonPointerLines(text);
  CHECK(lines.at("") == 1);
  CHECK(lines.at("/a") == 2);
  CHECK(lines.at("/a/0") == 3);
  CHECK(lines.at("/a/1") == 4);
  CHECK(lines.at("/a/1/b~0~1c") == 4);
  CHECK(lines.at("/a/1/d") == 5);
  CHECK(lines.at("/eA") == 7); // keys are decoded
  CHECK(lines.size() == 7);
  // Not JSON: incomplete, but safe.
  CHECK_NOTHROW(detail::jsonPointerLines("{\"a\": [\"unterminated"));
  CHECK_NOTHROW(detail::jsonPointerLines("]]]}}:,"));
}
