// The text summary of an analysis (report.h).
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "group_labels.h"

#include "llvm/Support/Format.h"

#include <array>
#include <map>

namespace dumpsift {

using detail::describeKinds;
using detail::sizeLabel;

namespace {

/// "1 group", "3 groups".
std::string plural(uint64_t n, const std::string &noun) {
  return groupedDigits(n) + " " + noun + (n == 1 ? "" : "s");
}

/// `note` as a list item ("  - "), wrapped at word boundaries to kNoteWidth columns, its further
/// lines indented under its first word. A word longer than a line is left whole.
void writeWrapped(const std::string &note, llvm::raw_ostream &out) {
  constexpr size_t kNoteWidth = 100;
  std::string line = "  -";
  size_t pos = 0;
  while (pos < note.size()) {
    size_t end = note.find(' ', pos);
    if (end == std::string::npos)
      end = note.size();
    const std::string_view word(note.data() + pos, end - pos);
    if (line.size() > 4 && line.size() + 1 + word.size() > kNoteWidth) {
      out << line << "\n";
      line = "   ";
    }
    line += ' ';
    line += word;
    pos = end + 1;
  }
  out << line << "\n";
}

} // namespace

void writeSummaryText(const Snapshot &snapshot, const Analysis &analysis, const TextOptions &opts,
                      llvm::raw_ostream &out) {
  out << detail::dumpLine(snapshot) << "\n";
  if (const std::optional<Truncation> &t = snapshot.truncation)
    out << "TRUNCATED: the file ends at byte " << groupedDigits(t->file_size) << " of "
        << groupedDigits(t->expected_size) << "; " << humanBytes(t->missing_bytes)
        << " of memory from " << hexAddress(t->first_missing_address)
        << " on is missing, so what lies there is not reported\n";

  out << "heaps: " << detail::heapsLine(analysis) << "\n";
  uint64_t total = 0;
  for (const Buffer &b : analysis.buffers)
    total += b.allocation.size;
  out << "large buffers (>= " << groupedDigits(analysis.options.min_size)
      << " bytes): " << plural(analysis.buffers.size(), "buffer") << ", " << humanBytes(total)
      << ", " << plural(analysis.groups.size(), "size group") << "\n";
  if (analysis.groups.empty()) {
    out << "\nnothing at or above the size threshold.\n";
  } else {
    out << "\n";
    // Rows are gathered first so the size column is as wide as its widest label.
    std::vector<std::array<std::string, 6>> rows;
    rows.push_back({"size", "state", "count", "total", "example", "kinds"});
    bool any_truncated = false;
    size_t shown = 0;
    uint64_t other_count = 0, other_bytes = 0;
    for (const SizeGroup &g : analysis.groups) {
      if (shown < opts.top) {
        std::string size = sizeLabel(analysis, g);
        if (g.kind)
          size += " " + kindName(*g.kind).str();
        uint64_t example = UINT64_MAX; // the lowest member, for `extract --address`
        for (size_t i : g.members)
          example = std::min(example, analysis.buffers[i].allocation.address);
        std::string kinds = describeKinds(analysis, g);
        any_truncated |= kinds.find(" truncated") != std::string::npos;
        rows.push_back({size, stateName(g.state).str(), groupedDigits(g.count),
                        humanBytes(g.total_bytes), g.members.empty() ? "" : hexAddress(example),
                        kinds});
        ++shown;
      } else {
        other_count += g.count;
        other_bytes += g.total_bytes;
      }
    }
    if (other_count)
      rows.push_back({"[other " + plural(analysis.groups.size() - shown, "group") + "]", "",
                      groupedDigits(other_count), humanBytes(other_bytes), "", ""});
    rows.push_back(
        {"TOTAL", "", groupedDigits(analysis.buffers.size()), humanBytes(total), "", ""});
    size_t size_width = 0, example_width = 0;
    for (const auto &r : rows) {
      size_width = std::max(size_width, r[0].size());
      example_width = std::max(example_width, r[4].size());
    }
    for (const auto &r : rows) {
      std::string text;
      llvm::raw_string_ostream line(text);
      line << llvm::right_justify(r[0], unsigned(size_width)) << "  " << llvm::left_justify(r[1], 7)
           << llvm::right_justify(r[2], 6) << " " << llvm::right_justify(r[3], 10) << "  "
           << llvm::left_justify(r[4], unsigned(example_width)) << "  " << r[5];
      line.flush();
      text.erase(text.find_last_not_of(' ') + 1); // no trailing blanks on the TOTAL row
      out << text << "\n";
    }
    if (any_truncated)
      out << "(truncated: the content goes on past the end of its buffer, which holds only its "
             "start)\n";
    // What holds the buffers of the groups in the table (docs/holders.md), one line each.
    if (analysis.holders.run.requested != HoldersMode::None) {
      out << "\nheld by"
          << (analysis.holders.run.reachability ? "" : " (reachability not computed)") << ":\n";
      for (size_t i = 0; i < shown; ++i) {
        const SizeGroup &g = analysis.groups[i];
        std::string size = sizeLabel(analysis, g);
        if (g.kind)
          size += " " + kindName(*g.kind).str();
        writeWrapped(
            printable(size + ": " +
                      detail::holdersSentence(summarizeHolders(analysis.holders, g.members))),
            out);
      }
    }
  }

  // The table says what the groups hold; the notes say what it means. Findings come largest
  // first: the top ones, then one line for the rest (their bytes overlap, so they are not added).
  std::vector<std::string> notes;
  for (size_t i = 0; i < analysis.findings.size() && i < opts.top; ++i)
    notes.push_back(printable(analysis.findings[i].explanation));
  if (analysis.findings.size() > opts.top)
    notes.push_back("and " + groupedDigits(analysis.findings.size() - opts.top) + " more finding" +
                    (analysis.findings.size() - opts.top == 1 ? "" : "s") +
                    " in the JSON report (--report; --top N shows more here, --top 0 all)");
  size_t warnings = snapshot.diagnostics.warnings().size() + analysis.diagnostics.warnings().size();
  if (warnings)
    notes.push_back(plural(warnings, "warning") +
                    " about damaged or missing data (see the JSON report's diagnostics)");
  if (!notes.empty()) {
    out << "\nnotable:\n";
    for (const std::string &n : notes)
      writeWrapped(n, out);
  }
}

} // namespace dumpsift
