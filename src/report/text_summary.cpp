// The text summary of an analysis (report.h).
#include "dumpsift/report/report.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"

#include <array>
#include <iomanip>
#include <map>
#include <sstream>

namespace dumpsift {

namespace {

const std::string *detailString(const Details &d, llvm::StringRef key) {
  const DetailValue *v = d.get(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}

bool detailFalse(const Details &d, llvm::StringRef key) {
  const DetailValue *v = d.get(key);
  const bool *b = v ? std::get_if<bool>(v) : nullptr;
  return b && !*b;
}

bool detailTrue(const Details &d, llvm::StringRef key) {
  const DetailValue *v = d.get(key);
  const bool *b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

// "12 truncated", "payload jpeg": what the members of one kind have in common.
std::string kindQualifiers(const Analysis &analysis, const SizeGroup &group, ContentKind kind) {
  uint64_t truncated = 0, final_chunk = 0;
  std::map<std::string, uint64_t> payloads;
  for (size_t i : group.members) {
    const Buffer &b = analysis.buffers[i];
    if (b.content.kind != kind)
      continue;
    const Details &d = b.content.details;
    // "truncated" (the buffer ends inside the content) decides where a kind reports it: an
    // aws-chunked buffer holding one whole chunk is not complete (no final chunk) but not cut.
    if (d.get("truncated") ? detailTrue(d, "truncated") : detailFalse(d, "complete"))
      ++truncated;
    if (detailTrue(d, "final_chunk"))
      ++final_chunk;
    if (const std::string *p = detailString(d, "payload_kind"))
      ++payloads[*p];
  }
  std::vector<std::string> parts;
  if (truncated)
    parts.push_back(std::to_string(truncated) + " truncated");
  for (const auto &[payload, n] : payloads)
    parts.push_back("payload " + payload + (payloads.size() > 1 ? " " + std::to_string(n) : ""));
  if (final_chunk)
    parts.push_back(std::to_string(final_chunk) + " with final chunk");
  std::string out;
  for (const std::string &p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

/// The heap whose walker made the group's buffers, when that walker's sizes are size classes
/// and no buffer of the group is sized in whole pages instead; nullptr otherwise.
const HeapWalkResult *sizeClassHeap(const Analysis &analysis, const SizeGroup &g) {
  if (g.members.empty())
    return nullptr;
  const Buffer &first = analysis.buffers[g.members.front()];
  if (first.source >= analysis.heaps.size() || !analysis.heaps[first.source].size_classes)
    return nullptr;
  for (size_t i : g.members)
    if (analysis.buffers[i].allocation.whole_pages)
      return nullptr;
  return &analysis.heaps[first.source];
}

/// "135,152", "131,096 byte[] len 131,072", "jemalloc size class 163,840".
std::string sizeLabel(const Analysis &analysis, const SizeGroup &g) {
  std::string label = groupedDigits(g.size);
  if (const HeapWalkResult *heap = sizeClassHeap(analysis, g))
    return heap->walker + " size class " + label;
  if (!g.members.empty()) {
    const Allocation &a = analysis.buffers[g.members.front()].allocation;
    if (a.managed)
      label +=
          " " +
          (a.managed->type_name.empty() ? std::string("array") : printable(a.managed->type_name)) +
          " len " + groupedDigits(a.managed->length);
  }
  return label;
}

/// "jpeg x12 (truncated 12), aws-chunked x12 (payload jpeg)": the kinds of a group, in words.
std::string describeKinds(const Analysis &analysis, const SizeGroup &group) {
  std::string out;
  for (const auto &[kind, count] : group.kinds) {
    if (!out.empty())
      out += ", ";
    out += kindName(kind).str() + " x" + std::to_string(count);
    std::string q = kindQualifiers(analysis, group, kind);
    if (!q.empty())
      out += " (" + q + ")";
  }
  return out;
}

} // namespace

void writeSummaryText(const Snapshot &snapshot, const Analysis &analysis, const TextOptions &opts,
                      std::ostream &out) {
  const ProcessInfo &p = snapshot.process;
  out << printable(snapshot.path) << ": " << formatName(snapshot.format).str() << " "
      << printable(snapshot.system.os) << "/" << printable(snapshot.system.arch);
  if (p.pid)
    out << ", pid " << *p.pid;
  if (!p.name.empty())
    out << " (" << printable(p.name) << ")";
  out << ", " << humanBytes(snapshot.capturedBytes()) << " captured\n";

  out << "heaps:";
  if (analysis.heaps.empty())
    out << " no allocator recognised";
  for (const HeapWalkResult &h : analysis.heaps) {
    out << " " << h.walker << " (" << groupedDigits(h.stats.used_count) << " used "
        << humanBytes(h.stats.used_bytes) << ", " << groupedDigits(h.stats.free_count) << " free "
        << humanBytes(h.stats.free_bytes) << ")";
  }
  uint64_t unclaimed = 0;
  for (const UnclaimedRange &u : analysis.unclaimed)
    unclaimed += u.size;
  out << "; unclaimed heap/anonymous memory " << humanBytes(unclaimed)
      << (analysis.options.region_scan ? " (scanned)" : " (not scanned)") << "\n";

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
    notes.push_back(printable(analysis.findings[i].explanation));
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
