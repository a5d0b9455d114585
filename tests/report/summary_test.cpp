// The text summary (report.h) of the waste fixture (fixtures/programs/waste.c), dumped live with
// gcore: each finding in plain words, with the sizes the process printed, and --top.
#include "analysis/waste_manifest.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/sizes.h"
#include "support/dumps.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// 364528 -> "364,528" (written here, not taken from the code under test).
std::string commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

/// The summary with each wrapped "notable:" item joined back into one line, after checking that
/// no line of it is wider than 100 columns.
std::string unwrapped(const std::string &summary) {
  std::istringstream lines(summary);
  std::string out;
  bool in_notes = false;
  for (std::string line; std::getline(lines, line);) {
    in_notes |= line == "notable:";
    if (in_notes)
      CHECK(line.size() <= 100);
    if (in_notes && line.rfind("    ", 0) == 0 && !out.empty())
      out.back() = ' ', out += line.substr(4);
    else
      out += line;
    out += '\n';
  }
  return out;
}

} // namespace

TEST_CASE("summary: the waste of a live process in plain words (waste fixture)", "[live]") {
  if (!gcoreOrSkipped())
    return;
  LiveProcess proc(fixtureProgram("waste"));
  std::unique_ptr<Snapshot> snap = dumpLive(proc, "summary_waste");
  AddressSpace memory(*snap);
  auto planted = byName(proc.manifest());
  REQUIRE(planted["copy"].size() == 3);

  AnalyzeOptions options;
  options.min_size = 256; // the whole growth trail, from its 256-byte array
  options.threads = 2;
  Analysis analysis = analyze(memory, options);
  const std::vector<Finding> &all = analysis.findings;

  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeSummaryText(*snap, analysis, TextOptions{}, text);
  std::string summary = unwrapped(text.str());
  INFO(summary);
  uint64_t copy = planted["copy"][0].usable;
  CHECK(summary.find("  - 3 buffers of " + commas(copy) +
                     " bytes hold the same 1024x640 jpeg: 2 redundant copies waste " +
                     humanBytes(2 * copy) + "\n") != std::string::npos);
  CHECK(summary.find("  - a buffer grew x2 at a time from 264 to 266,224 bytes and left 10 "
                     "outgrown arrays behind, each holding the start of the same jpeg stream: ") !=
        std::string::npos);
  CHECK(summary.find("  - 12 buffers of 1,052,656 bytes are entirely zero: 12.0 MiB holding "
                     "nothing (pool buffers rented and returned, or memory allocated ahead of "
                     "need)\n") != std::string::npos);
  CHECK(summary.find("  - a buffer of 1,052,656 bytes holds 102,400 bytes of json and then "
                     "950,256 zero bytes: its capacity is far beyond its content (90% unused)\n") !=
        std::string::npos);
  CHECK(summary.find("  - 128 buffers of 72,008 bytes all hold json (8.8 MiB): likely one code "
                     "path allocating a buffer per request, or a pool holding them\n") !=
        std::string::npos);

  // --top 2: the two largest findings, then one line counts the rest.
  REQUIRE(all.size() > 3);
  std::string top2_text;
  llvm::raw_string_ostream top2(top2_text);
  writeSummaryText(*snap, analysis, TextOptions{2}, top2);
  const std::string short_summary = unwrapped(top2.str());
  INFO(short_summary);
  CHECK(short_summary.find("  - " + all[0].explanation + "\n") != std::string::npos);
  CHECK(short_summary.find("  - " + all[1].explanation + "\n") != std::string::npos);
  if (all[2].explanation != all[0].explanation && all[2].explanation != all[1].explanation)
    CHECK(short_summary.find(all[2].explanation) == std::string::npos);
  CHECK(short_summary.find("  - and " + std::to_string(all.size() - 2) +
                           " more findings in the JSON report") != std::string::npos);
}
