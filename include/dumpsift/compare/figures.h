// The figures of a report that `diff` and `check` read (docs/ci.md). The report layer reads them
// out of a report's JSON text (readReport, dumpsift/report/saved_report.h): a stored report and one
// just made from a dump are read the same way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift {

/// Count and bytes of some set of buffers (or findings).
struct Tally {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

/// What `diff` and `check` read of one report.
struct ReportFigures {
  struct Group {
    uint64_t size = 0;
    std::string state;
    std::string kind; // set when the report groups by size and kind; empty otherwise
    uint64_t count = 0;
    uint64_t total_bytes = 0;
    std::vector<std::pair<std::string, uint64_t>> kinds; // count per kind, as reported
  };
  struct FindingEntry {
    std::string type;
    uint64_t bytes = 0;
    std::vector<std::pair<std::string, uint64_t>> numbers; // type-specific figures, report order
    std::string explanation;
  };

  Tally buffers;                        // summary.buffers, summary.buffer_bytes
  std::map<std::string, Tally> by_kind; // summary.by_kind
  std::vector<Group> groups;            // report order
  std::vector<FindingEntry> findings;   // report order
  /// The options the report was made with, each as compact JSON ("min_size": "65536"), in report
  /// order; nullopt when the report has no options object. diff compares them as they are
  /// written; recordedOptions (saved_report.h) reads them as analysis options.
  std::optional<std::vector<std::pair<std::string, std::string>>> options;
  std::string dump_path; // dump.path ("" when absent)
  /// dump.truncated: the dump file ends before the data its headers describe.
  struct Truncation {
    uint64_t file_size = 0;
    uint64_t expected_size = 0;
    std::string first_missing_address;
    uint64_t missing_bytes = 0;
  };
  std::optional<Truncation> truncated;
  uint64_t warnings = 0; // entries of the report's diagnostics
};

} // namespace dumpsift
