// The text summary of an analysis (report.h).
#include "dumpsift/report/report.h"
#include "dumpsift/support/sizes.h"
#include "group_labels.h"

#include <array>
#include <iomanip>
#include <map>
#include <sstream>

namespace dumpsift {

using detail::describeKinds;
using detail::sizeClassHeap;
using detail::sizeLabel;

void writeSummaryText(const Snapshot &snapshot, const Analysis &analysis, const TextOptions &opts,
                      std::ostream &out) {
  out << detail::dumpLine(snapshot) << "\n";
  out << "heaps: " << detail::heapsLine(analysis) << "\n";
  uint64_t total = 0;
  for (const Buffer &b : analysis.buffers)
    total += b.allocation.size;
  out << "large buffers (>= " << groupedDigits(analysis.options.min_size)
      << " bytes): " << groupedDigits(analysis.buffers.size()) << " buffers, " << humanBytes(total)
      << ", " << analysis.groups.size() << " size groups\n";
  if (analysis.groups.empty()) {
    out << "\nnothing at or above the size threshold.\n";
  } else {
    out << "\n";
    // Rows are gathered first so the size column is as wide as its widest label.
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"size", "state", "count", "total", "kinds"});
    size_t shown = 0;
    uint64_t other_count = 0, other_bytes = 0;
    for (const SizeGroup &g : analysis.groups) {
      if (shown < opts.top) {
        std::string size = sizeLabel(analysis, g);
        if (g.kind)
          size += " " + kindName(*g.kind).str();
        rows.push_back({size, stateName(g.state).str(), groupedDigits(g.count),
                        humanBytes(g.total_bytes), describeKinds(analysis, g)});
        ++shown;
      } else {
        other_count += g.count;
        other_bytes += g.total_bytes;
      }
    }
    if (other_count)
      rows.push_back({"[other " + std::to_string(analysis.groups.size() - shown) + " groups]", "",
                      groupedDigits(other_count), humanBytes(other_bytes), ""});
    rows.push_back({"TOTAL", "", groupedDigits(analysis.buffers.size()), humanBytes(total), ""});
    size_t size_width = 0;
    for (const auto &r : rows)
      size_width = std::max(size_width, r[0].size());
    for (const auto &r : rows) {
      std::ostringstream line;
      line << std::right << std::setw(int(size_width)) << r[0] << "  " << std::left << std::setw(7)
           << r[1] << std::right << std::setw(6) << r[2] << " " << std::setw(10) << r[3] << "  "
           << r[4];
      std::string text = line.str();
      text.erase(text.find_last_not_of(' ') + 1); // no trailing blanks on the TOTAL row
      out << text << "\n";
    }
  }

  std::vector<std::string> notes;
  for (size_t i = 0; i < analysis.groups.size() && i < 3; ++i) {
    const SizeGroup &g = analysis.groups[i];
    if (g.count < 2)
      continue;
    std::ostringstream line;
    if (sizeClassHeap(analysis, g))
      line << g.count << " buffers of " << sizeLabel(analysis, g);
    else
      line << g.count << " " << g.allocator << " buffers of " << sizeLabel(analysis, g) << " bytes";
    line << " hold " << humanBytes(g.total_bytes) << ": " << describeKinds(analysis, g);
    notes.push_back(line.str());
  }
  // Findings come largest first: the top ones, then one line for the rest (their bytes overlap,
  // so they are not added up).
  for (size_t i = 0; i < analysis.findings.size() && i < opts.top; ++i)
    notes.push_back(analysis.findings[i].explanation);
  if (analysis.findings.size() > opts.top)
    notes.push_back("and " + groupedDigits(analysis.findings.size() - opts.top) +
                    " more findings in the JSON report (--report; --top N shows more here)");
  size_t warnings = snapshot.diagnostics.warnings().size() + analysis.diagnostics.warnings().size();
  if (warnings)
    notes.push_back(std::to_string(warnings) +
                    " warnings about damaged or missing data (see the JSON report's diagnostics)");
  if (!notes.empty()) {
    out << "\nnotable:\n";
    for (const std::string &n : notes)
      out << "  - " << n << "\n";
  }
}

} // namespace dumpsift
