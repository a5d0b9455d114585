// What `fleet report` writes (fleet_report.h): text, JSON, and the fleet page.
#include "dumpsift/fleet/fleet_report.h"

#include "dumpsift/report/html_page.h"
#include "dumpsift/sniff/kinds.h"
#include "dumpsift/support/page_link.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/utf8.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <vector>

namespace dumpsift {

namespace {

constexpr size_t kListedGroups = 1000;
constexpr size_t kListedDumps = 1000;

/// The outcomes in the order every output lists them.
constexpr llvm::StringLiteral kOutcomeOrder[] = {"ok", "truncated", "bad-input", "gave-up",
                                                 "missing"};

/// "12 ok, 1 truncated, 1 bad-input, 0 gave-up, 0 missing" (and any other outcome after).
std::string outcomeLine(const FleetAnswers &answers) {
  std::string line;
  for (llvm::StringRef outcome : kOutcomeOrder) {
    auto it = answers.outcome_counts.find(outcome.str());
    line += (line.empty() ? "" : ", ") +
            groupedDigits(it == answers.outcome_counts.end() ? 0 : it->second) + " " +
            outcome.str();
  }
  for (const auto &[outcome, count] : answers.outcome_counts)
    if (std::find(std::begin(kOutcomeOrder), std::end(kOutcomeOrder), outcome) ==
        std::end(kOutcomeOrder))
      line += ", " + groupedDigits(count) + " " + outcome;
  return line;
}

/// "90,008 used" or "90,008 used text" (reports grouped by size and kind).
std::string groupName(uint64_t size, const std::string &state, const std::string &kind) {
  return groupedDigits(size) + " " + state + (kind.empty() ? "" : " " + kind);
}

/// "api" or "(no service)".
std::string serviceName(const std::string &service) {
  return service.empty() ? "(no service)" : service;
}

/// "1.1 .. 1.2", or "1.1" when both ends are the same version.
std::string versionSpan(const std::string &first, const std::string &last) {
  return first == last ? first : first + " .. " + last;
}

/// "4 of 4 whole dumps since 1.1".
std::string recurrence(const FleetAnswers::RecurringGroup &g) {
  return groupedDigits(g.dumps) + " of " + groupedDigits(g.whole_dumps_since_first) +
         " whole dumps since " + (g.first_version.empty() ? "(no version)" : g.first_version);
}

} // namespace

void writeFleetText(const FleetAnswers &answers, size_t top, llvm::raw_ostream &out) {
  out << "fleet: " << groupedDigits(answers.outcomes.size()) << " dumps: " << outcomeLine(answers)
      << "\n";

  out << "\nrecurring size groups (held by 2 or more whole dumps of a service, largest first):\n";
  if (answers.recurring_groups.empty())
    out << "  none\n";
  for (size_t i = 0; i < answers.recurring_groups.size() && i < top; ++i) {
    const FleetAnswers::RecurringGroup &g = answers.recurring_groups[i];
    out << "  " << serviceName(g.service) << "  " << groupName(g.size, g.state, g.kind) << ": "
        << recurrence(g) << (g.dumps == g.whole_dumps_since_first ? " (every one)" : "")
        << "; versions " << versionSpan(g.first_version, g.last_version) << "; "
        << groupedDigits(g.buffers) << " buffers, " << humanBytes(g.bytes) << "; "
        << g.dominant_kinds << "\n";
  }
  if (answers.recurring_groups.size() > top)
    out << "  and " << groupedDigits(answers.recurring_groups.size() - top)
        << " more (view recurring_groups)\n";

  out << "\ngroups new in a version (held by no whole dump of an earlier version):\n";
  if (answers.new_groups.empty())
    out << "  none\n";
  for (size_t i = 0; i < answers.new_groups.size() && i < top; ++i) {
    const FleetAnswers::NewGroup &g = answers.new_groups[i];
    out << "  " << serviceName(g.service) << " " << g.version << ": "
        << groupName(g.size, g.state, g.kind) << " in " << groupedDigits(g.dumps)
        << (g.dumps == 1 ? " dump, " : " dumps, ") << humanBytes(g.bytes) << "\n";
  }
  if (answers.new_groups.size() > top)
    out << "  and " << groupedDigits(answers.new_groups.size() - top)
        << " more (view new_groups)\n";

  out << "\nwaste per finding type (whole dumps; types overlap, so they are not added up):\n";
  if (answers.waste_by_type.empty())
    out << "  none\n";
  for (const FleetAnswers::WasteType &w : answers.waste_by_type) {
    out << "  " << w.type << ": " << groupedDigits(w.findings) << " findings in "
        << groupedDigits(w.dumps) << " dumps, " << humanBytes(w.bytes) << "; the largest:\n";
    for (const FleetAnswers::Waste &f : answers.top_waste)
      if (f.type == w.type && f.rank <= 3)
        out << "    " << f.id << " (" << serviceName(f.service) << " " << f.version
            << "): " << humanBytes(f.bytes) << ": " << f.explanation << "\n";
  }

  bool heading = false;
  for (const FleetAnswers::Outcome &o : answers.outcomes) {
    if (o.outcome == "ok")
      continue;
    if (!heading)
      out << "\nnot ok:\n";
    heading = true;
    out << "  " << o.id << "  " << o.outcome << ": " << o.error << "\n";
  }
}

void writeFleetJson(const FleetAnswers &answers, llvm::raw_ostream &out) {
  llvm::json::OStream json(out, /*IndentSize=*/2);
  auto text = [](const std::string &value) { return toValidUtf8(value); };
  auto count = [](uint64_t value) { return int64_t(value); };
  json.object([&] {
    json.attributeObject("outcome_counts", [&] {
      for (const auto &[outcome, n] : answers.outcome_counts)
        json.attribute(text(outcome), count(n));
    });
    json.attributeArray("outcomes", [&] {
      for (const FleetAnswers::Outcome &o : answers.outcomes)
        json.object([&] {
          json.attribute("id", text(o.id));
          json.attribute("service", text(o.service));
          json.attribute("version", text(o.version));
          json.attribute("outcome", text(o.outcome));
          json.attribute("attempts", count(o.attempts));
          json.attribute("error", text(o.error));
          json.attribute("dump", text(o.dump));
          json.attribute("page", text(o.page));
        });
    });
    json.attributeArray("recurring_groups", [&] {
      for (const FleetAnswers::RecurringGroup &g : answers.recurring_groups)
        json.object([&] {
          json.attribute("service", text(g.service));
          json.attribute("size", count(g.size));
          json.attribute("state", text(g.state));
          json.attribute("kind", text(g.kind));
          json.attribute("dumps", count(g.dumps));
          json.attribute("whole_dumps_since_first", count(g.whole_dumps_since_first));
          json.attribute("buffers", count(g.buffers));
          json.attribute("bytes", count(g.bytes));
          json.attribute("dominant_kinds", text(g.dominant_kinds));
          json.attribute("first_version", text(g.first_version));
          json.attribute("last_version", text(g.last_version));
          json.attributeArray("holders", [&] {
            for (const auto &h : g.holders)
              json.object([&] {
                json.attribute("id", text(h.id));
                json.attribute("version", text(h.version));
                json.attribute("page", text(h.page));
              });
          });
        });
    });
    json.attributeArray("kind_bytes", [&] {
      for (const FleetAnswers::KindBytes &k : answers.kind_bytes)
        json.object([&] {
          json.attribute("service", text(k.service));
          json.attribute("version", text(k.version));
          json.attribute("kind", text(k.kind));
          json.attribute("whole_dumps", count(k.whole_dumps));
          json.attribute("dumps", count(k.dumps));
          json.attribute("buffers", count(k.buffers));
          json.attribute("bytes", count(k.bytes));
        });
    });
    json.attributeArray("new_groups", [&] {
      for (const FleetAnswers::NewGroup &g : answers.new_groups)
        json.object([&] {
          json.attribute("service", text(g.service));
          json.attribute("version", text(g.version));
          json.attribute("size", count(g.size));
          json.attribute("state", text(g.state));
          json.attribute("kind", text(g.kind));
          json.attribute("dumps", count(g.dumps));
          json.attribute("bytes", count(g.bytes));
        });
    });
    json.attributeArray("waste_by_type", [&] {
      for (const FleetAnswers::WasteType &w : answers.waste_by_type)
        json.object([&] {
          json.attribute("type", text(w.type));
          json.attribute("findings", count(w.findings));
          json.attribute("dumps", count(w.dumps));
          json.attribute("bytes", count(w.bytes));
          json.attribute("largest", count(w.largest));
        });
    });
    json.attributeArray("top_waste", [&] {
      for (const FleetAnswers::Waste &w : answers.top_waste)
        json.object([&] {
          json.attribute("type", text(w.type));
          json.attribute("rank", count(w.rank));
          json.attribute("id", text(w.id));
          json.attribute("service", text(w.service));
          json.attribute("version", text(w.version));
          json.attribute("bytes", count(w.bytes));
          json.attribute("explanation", text(w.explanation));
          json.attribute("page", text(w.page));
        });
    });
  });
  out << "\n";
}

namespace {

/// The fleet page, section by section.
class FleetPage {
public:
  FleetPage(const FleetAnswers &answers, const std::string &page_path, llvm::raw_ostream &out)
      : answers_(answers), page_path_(page_path), out_(out) {}

  void write() {
    writeHtmlPageStart(out_, "dumpsift fleet");
    out_ << "<h1>dumpsift fleet report</h1>\n<p class=\"line\">"
         << groupedDigits(answers_.outcomes.size())
         << " dumps: " << htmlEscape(outcomeLine(answers_)) << "</p>\n";
    writeOutcomes();
    writeRecurring();
    writeTrends();
    writeNewGroups();
    writeWaste();
    writeHtmlPageEnd(out_);
  }

private:
  /// The dump `id` linked to its own page when it has one.
  std::string dumpLink(const std::string &id, const std::string &page) const {
    if (page.empty())
      return htmlEscape(id);
    return "<a class=\"dump\" href=\"" + htmlEscape(linkFromPage(page_path_, page)) + "\">" +
           htmlEscape(id) + "</a>";
  }

  /// Per service and version: how many dumps ended each way; then every dump not ok.
  void writeOutcomes() {
    out_ << "<h2>Outcomes</h2>\n<table id=\"outcomes\"><thead><tr><th>service</th>"
            "<th>version</th>";
    for (llvm::StringRef outcome : kOutcomeOrder)
      out_ << "<th class=\"n\">" << outcome << "</th>";
    out_ << "</tr></thead><tbody>\n";
    // outcomes come by service and version (as version numbers).
    for (size_t i = 0; i < answers_.outcomes.size();) {
      const FleetAnswers::Outcome &first = answers_.outcomes[i];
      std::map<std::string, uint64_t> counts;
      size_t j = i;
      for (; j < answers_.outcomes.size() && answers_.outcomes[j].service == first.service &&
             answers_.outcomes[j].version == first.version;
           ++j)
        ++counts[answers_.outcomes[j].outcome];
      out_ << "<tr><td>" << htmlEscape(serviceName(first.service)) << "</td><td>"
           << htmlEscape(first.version) << "</td>";
      for (llvm::StringRef outcome : kOutcomeOrder)
        out_ << "<td class=\"n\">" << groupedDigits(counts[outcome.str()]) << "</td>";
      out_ << "</tr>\n";
      i = j;
    }
    out_ << "</tbody></table>\n";
    size_t listed = 0, not_ok = 0;
    for (const FleetAnswers::Outcome &o : answers_.outcomes) {
      if (o.outcome == "ok")
        continue;
      if (++not_ok > kListedDumps)
        continue;
      if (!listed++)
        out_ << "<h2>Dumps that are not ok</h2>\n<table id=\"not-ok\"><thead><tr><th>dump</th>"
                "<th>service</th><th>version</th><th>outcome</th><th class=\"n\">attempts</th>"
                "<th>why</th></tr></thead><tbody>\n";
      out_ << "<tr data-outcome=\"" << htmlEscape(o.outcome) << "\"><td>" << dumpLink(o.id, o.page)
           << "</td><td>" << htmlEscape(o.service) << "</td><td>" << htmlEscape(o.version)
           << "</td><td>" << htmlEscape(o.outcome) << "</td><td class=\"n\">" << o.attempts
           << "</td><td>" << htmlEscape(o.error) << "</td></tr>\n";
    }
    if (listed)
      out_ << "</tbody></table>\n";
    if (not_ok > listed)
      out_ << "<p class=\"note\">and " << groupedDigits(not_ok - listed)
           << " more (the database has them all: view outcomes).</p>\n";
  }

  void writeRecurring() {
    out_ << "<h2>Recurring size groups</h2>\n<p class=\"note\">Size groups that two or more whole "
            "dumps of a service hold, largest first; whole dumps since the first version that "
            "holds one count those of every later version too.</p>\n";
    if (answers_.recurring_groups.empty()) {
      out_ << "<p>None.</p>\n";
      return;
    }
    out_ << "<input id=\"filter\" type=\"search\" hidden placeholder=\"filter groups\">\n"
            "<table id=\"groups\" class=\"sortable\"><thead><tr><th>service</th>"
            "<th data-sort=\"num\" class=\"n\">size</th><th>state</th>"
            "<th data-sort=\"num\" class=\"n\">dumps</th><th data-sort=\"num\" class=\"n\">"
            "bytes</th><th>kinds</th><th>first</th><th>last</th><th>dumps holding it</th>"
            "</tr></thead><tbody>\n";
    const size_t shown = std::min(answers_.recurring_groups.size(), kListedGroups);
    for (size_t i = 0; i < shown; ++i) {
      const FleetAnswers::RecurringGroup &g = answers_.recurring_groups[i];
      out_ << "<tr data-every=\"" << (g.dumps == g.whole_dumps_since_first ? "yes" : "no")
           << "\"><td>" << htmlEscape(serviceName(g.service)) << "</td><td class=\"n\" data-v=\""
           << g.size << "\">" << htmlEscape(groupName(g.size, "", g.kind)) << "</td><td>"
           << htmlEscape(g.state) << "</td><td class=\"n\" data-v=\"" << g.dumps << "\">"
           << groupedDigits(g.dumps) << " of " << groupedDigits(g.whole_dumps_since_first)
           << "</td><td class=\"n\" data-v=\"" << g.bytes << "\">" << humanBytes(g.bytes)
           << "</td><td>" << htmlEscape(g.dominant_kinds) << "</td><td>"
           << htmlEscape(g.first_version) << "</td><td>" << htmlEscape(g.last_version)
           << "</td><td>";
      for (size_t h = 0; h < g.holders.size(); ++h)
        out_ << (h ? ", " : "") << dumpLink(g.holders[h].id, g.holders[h].page);
      if (g.dumps > g.holders.size())
        out_ << " and " << groupedDigits(g.dumps - g.holders.size()) << " more";
      out_ << "</td></tr>\n";
    }
    out_ << "</tbody></table>\n";
    if (shown < answers_.recurring_groups.size())
      out_ << "<p class=\"note\">and " << groupedDigits(answers_.recurring_groups.size() - shown)
           << " smaller groups (view recurring_groups).</p>\n";
  }

  /// Each service's bytes per whole dump, by kind and version, as stacked bars.
  void writeTrends() {
    out_ << "<h2>Bytes per dump by version</h2>\n";
    if (answers_.kind_bytes.empty()) {
      out_ << "<p>No whole dump.</p>\n";
      return;
    }
    for (size_t i = 0; i < answers_.kind_bytes.size();) {
      size_t j = i;
      while (j < answers_.kind_bytes.size() &&
             answers_.kind_bytes[j].service == answers_.kind_bytes[i].service)
        ++j;
      writeTrend(i, j);
      i = j;
    }
  }

  /// The chart of kind_bytes rows [begin, end): one service, by version.
  void writeTrend(size_t begin, size_t end) {
    const std::string &service = answers_.kind_bytes[begin].service;
    struct Bar {
      std::string version;
      uint64_t whole_dumps = 0;
      std::vector<std::pair<std::string, double>> kinds; // bytes per dump, largest first
      double total = 0;
    };
    std::vector<Bar> bars;
    std::map<std::string, uint64_t> legend; // kind -> bytes in all versions
    for (size_t i = begin; i < end; ++i) {
      const FleetAnswers::KindBytes &k = answers_.kind_bytes[i];
      if (bars.empty() || bars.back().version != k.version)
        bars.push_back({k.version, k.whole_dumps, {}, 0});
      const double per_dump = double(k.bytes) / double(std::max<uint64_t>(1, k.whole_dumps));
      bars.back().kinds.emplace_back(k.kind, per_dump);
      bars.back().total += per_dump;
      legend[k.kind] += k.bytes;
    }
    double top = 1;
    for (const Bar &bar : bars)
      top = std::max(top, bar.total);
    constexpr double left = 80, right = 980, base = 200, height = 180;
    const double slot = (right - left) / double(bars.size());
    const double width = std::min(60.0, slot * 0.6);
    out_ << "<h3>" << htmlEscape(serviceName(service)) << "</h3>\n<svg class=\"trend\" "
         << "viewBox=\"0 0 1000 230\" role=\"img\" aria-label=\"bytes per dump of "
         << htmlEscape(serviceName(service)) << " by version\"><line x1=\"" << oneDecimal(left)
         << "\" y1=\"" << oneDecimal(base) << "\" x2=\"" << oneDecimal(right) << "\" y2=\""
         << oneDecimal(base) << "\" stroke=\"#888\"/>";
    for (int i = 0; i <= 2; ++i) {
      const double y = base - height * i / 2.0;
      out_ << "<line x1=\"" << oneDecimal(left) << "\" y1=\"" << oneDecimal(y) << "\" x2=\""
           << oneDecimal(right) << "\" y2=\"" << oneDecimal(y) << "\" stroke=\"#eee\"/><text x=\""
           << oneDecimal(left - 6) << "\" y=\"" << oneDecimal(y + 4) << "\" text-anchor=\"end\">"
           << humanBytes(uint64_t(top * i / 2)) << "</text>";
    }
    for (size_t b = 0; b < bars.size(); ++b) {
      const Bar &bar = bars[b];
      const double x = left + slot * (double(b) + 0.5);
      double y = base;
      for (const auto &[kind, bytes] : bar.kinds) {
        const double h = height * bytes / top;
        y -= h;
        out_ << "<rect class=\"bar\" data-version=\"" << htmlEscape(bar.version) << "\" x=\""
             << oneDecimal(x - width / 2) << "\" y=\"" << oneDecimal(y) << "\" width=\""
             << oneDecimal(width) << "\" height=\"" << oneDecimal(h) << "\" fill=\""
             << colourOf(kind) << "\"><title>" << htmlEscape(serviceName(service)) << " "
             << htmlEscape(bar.version) << ": " << htmlEscape(kind) << " "
             << humanBytes(uint64_t(bytes)) << " per dump (" << groupedDigits(bar.whole_dumps)
             << (bar.whole_dumps == 1 ? " whole dump" : " whole dumps") << ")</title></rect>";
      }
      out_ << "<text x=\"" << oneDecimal(x) << "\" y=\"" << oneDecimal(base + 17)
           << "\" text-anchor=\"middle\">" << htmlEscape(bar.version) << "</text>";
    }
    out_ << "</svg>\n<p class=\"legend\">";
    for (const auto &[kind, bytes] : legend)
      out_ << "<span><svg width=\"10\" height=\"10\" viewBox=\"0 0 10 10\" class=\"sw\"><rect "
              "width=\"10\" height=\"10\" fill=\""
           << colourOf(kind) << "\"/></svg> " << htmlEscape(kind) << "</span>";
    out_ << "</p>\n";
  }

  static llvm::StringRef colourOf(const std::string &kind) {
    return kindFacts(parseKind(kind).value_or(ContentKind::Unknown)).colour;
  }

  void writeNewGroups() {
    out_ << "<h2>Groups new in a version</h2>\n";
    if (answers_.new_groups.empty()) {
      out_ << "<p>None.</p>\n";
      return;
    }
    out_ << "<table id=\"new-groups\"><thead><tr><th>service</th><th>version</th>"
            "<th class=\"n\">size</th><th>state</th><th class=\"n\">dumps</th>"
            "<th class=\"n\">bytes</th></tr></thead><tbody>\n";
    const size_t shown = std::min(answers_.new_groups.size(), kListedGroups);
    for (size_t i = 0; i < shown; ++i) {
      const FleetAnswers::NewGroup &g = answers_.new_groups[i];
      out_ << "<tr><td>" << htmlEscape(serviceName(g.service)) << "</td><td>"
           << htmlEscape(g.version) << "</td><td class=\"n\">"
           << htmlEscape(groupName(g.size, "", g.kind)) << "</td><td>" << htmlEscape(g.state)
           << "</td><td class=\"n\">" << groupedDigits(g.dumps) << "</td><td class=\"n\">"
           << humanBytes(g.bytes) << "</td></tr>\n";
    }
    out_ << "</tbody></table>\n";
  }

  void writeWaste() {
    out_ << "<h2>Top waste per finding type</h2>\n<p class=\"note\">Findings of whole dumps. "
            "Types are different views of the same buffers: they are never added up.</p>\n";
    if (answers_.waste_by_type.empty()) {
      out_ << "<p>None.</p>\n";
      return;
    }
    for (const FleetAnswers::WasteType &w : answers_.waste_by_type) {
      out_ << "<h3>" << htmlEscape(w.type) << "</h3>\n<p class=\"line\">"
           << groupedDigits(w.findings) << " findings in " << groupedDigits(w.dumps) << " dumps, "
           << humanBytes(w.bytes) << "</p>\n<ol class=\"findings\">\n";
      for (const FleetAnswers::Waste &f : answers_.top_waste)
        if (f.type == w.type)
          out_ << "<li>" << dumpLink(f.id, f.page) << " (" << htmlEscape(serviceName(f.service))
               << " " << htmlEscape(f.version) << "), " << humanBytes(f.bytes) << ": "
               << htmlEscape(f.explanation) << "</li>\n";
      out_ << "</ol>\n";
    }
  }

  const FleetAnswers &answers_;
  const std::string &page_path_;
  llvm::raw_ostream &out_;
};

} // namespace

void writeFleetHtml(const FleetAnswers &answers, const std::string &page_path,
                    llvm::raw_ostream &out) {
  FleetPage(answers, page_path, out).write();
}

} // namespace dumpsift
