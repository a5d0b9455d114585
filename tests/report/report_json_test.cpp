// The JSON report's streamed writer (writeReportJson) against the report tree it streams: the
// same bytes as nlohmann's dump(2), with many buffers and with none, on the committed story core.
#include "../../src/report/json_values.h"
#include "dumpsift/report/report.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("the streamed report is the report tree's dump, byte for byte") {
  std::string core = unpackedFixture("cores/story.core.xz");
  auto snapshot = openDump(core);
  if (!snapshot)
    FAIL(core << ": " << llvm::toString(snapshot.takeError()));
  AddressSpace memory(**snapshot);
  for (uint64_t min_size : {uint64_t(65536), uint64_t(1) << 40}) { // many buffers, and none
    INFO("min_size " << min_size);
    AnalyzeOptions options;
    options.min_size = min_size;
    Analysis analysis = analyze(memory, options);
    CHECK(analysis.buffers.empty() == (min_size > 65536));
    std::string streamed;
    llvm::raw_string_ostream out(streamed);
    writeReportJson(**snapshot, analysis, nullptr, out);
    out.flush();
    CHECK(streamed == detail::reportJson(**snapshot, analysis).dump(2) + "\n");
  }
}
