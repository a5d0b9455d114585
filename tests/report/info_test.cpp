// `info --json` over the fuzz corpus's regression files (fixtures/corpus/minidump/regress-*,
// docs/fuzzing.md): names that were not UTF-8 reach the JSON repaired, and names that share one
// string keep it small.
#include "../../src/report/json_values.h"
#include "dumpsift/report/info.h"
#include "support/dumps.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The fuzz corpus file fixtures/corpus/minidump/<name>, opened.
std::unique_ptr<Snapshot> openRegression(const std::string &name) {
  return mustOpenDump(sourceDir() + "/fixtures/corpus/minidump/" + name);
}

} // namespace

TEST_CASE("info: module names that are not UTF-8 reach the JSON repaired") {
  auto snap = openRegression("regress-invalid-utf8-module-name.dmp");
  // dump() without an error handler throws on invalid UTF-8: nothing had to be replaced.
  CHECK_NOTHROW(detail::infoJson(*snap).dump());
}

TEST_CASE("info: module names sharing one string keep the JSON small") {
  auto snap = openRegression("regress-module-names-share-one-string.dmp");
  // Before the names' budget followed the file size, this 46 KB file gave 23 MB of JSON.
  std::string json_text;
  llvm::raw_string_ostream json(json_text);
  writeInfoJson(*snap, json);
  CHECK(json.str().size() < (4u << 20));
}

TEST_CASE("info: a process name and command line holding ESC, BEL and CR print escaped") {
  auto snap = openRegression("regress-terminal-escapes-in-names.dmp");
  REQUIRE(snap->process.command_line.find('\x1b') != std::string::npos);
  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeInfoText(*snap, text);
  const std::string out = text.str();
  INFO(out);
  for (char c : out)
    CHECK_FALSE(((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f));
  CHECK(out.find("process: evil\\x1b[2J\\x1b]0;owned\\x07\\x0dfake line\\x1b[31m (pid 42)\n") !=
        std::string::npos);
  CHECK(out.find("command line: /usr/bin/evil\\x1b[2J") != std::string::npos);
  // JSON keeps the bytes, escaped its own way.
  std::string json_text;
  llvm::raw_string_ostream json(json_text);
  writeInfoJson(*snap, json);
  CHECK(json.str().find("evil\\u001b[2J") != std::string::npos);
}

TEST_CASE("info: the streamed JSON is the built JSON, byte for byte") {
  // 35 regions; 34 and a diagnostic; 146 regions, 974 threads, 433 modules; no region at all.
  for (const char *name :
       {"rustminidump_linux-mini.dmp", "rustminidump_linux-mini.flip1",
        "regress-module-names-share-one-string.dmp", "regress-terminal-escapes-in-names.dmp"}) {
    INFO(name);
    auto snap = openRegression(name);
    std::string streamed_text;
    llvm::raw_string_ostream streamed(streamed_text);
    writeInfoJson(*snap, streamed);
    CHECK(streamed.str() == detail::dumpJson(detail::infoJson(*snap), 2) + "\n");
  }
}
