#include "dumpsift/report/info.h"

#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "dumpsift/support/version.h"
#include "json_values.h"

#include "llvm/Support/Format.h"

#include <algorithm>

namespace dumpsift {

using namespace detail;

namespace {

constexpr RegionClass kClasses[] = {RegionClass::Heap, RegionClass::Stack, RegionClass::Image,
                                    RegionClass::Anonymous, RegionClass::Other};

Json regionJson(const Region &r) {
  Json j;
  j["start"] = hexAddress(r.start);
  j["end"] = hexAddress(r.end());
  j["size"] = r.size;
  j["permissions"] = r.perms.str();
  j["class"] = className(r.cls).str();
  j["class_source"] = sourceName(r.class_source).str();
  j["capture"] = captureName(r.capture()).str();
  j["captured_bytes"] = r.captured;
  if (!r.backing_file.empty()) {
    j["file"] = r.backing_file;
    j["file_offset"] = r.file_offset;
  }
  return j;
}

} // namespace

ClassTotals classTotals(const Snapshot &snapshot) {
  ClassTotals totals;
  for (const Region &r : snapshot.regions) {
    auto c = static_cast<size_t>(r.cls);
    ++totals.region_count[c];
    totals.mapped[c] += r.size;
    totals.captured[c] += r.captured;
  }
  return totals;
}

Json detail::dumpSummaryJson(const Snapshot &snapshot) {
  Json j;
  j["path"] = snapshot.path;
  j["format"] = formatName(snapshot.format).str();
  j["os"] = osName(snapshot.system.os).str();
  j["arch"] = snapshot.system.arch;
  j["pointer_size"] = snapshot.system.pointer_size;
  j["endianness"] = snapshot.system.little_endian ? "little" : "big";
  j["pid"] = snapshot.process.pid ? Json(*snapshot.process.pid) : Json(nullptr);
  j["process"] = snapshot.process.name;
  if (!snapshot.process.command_line.empty())
    j["command_line"] = snapshot.process.command_line;
  j["file_size"] = snapshot.file ? snapshot.file->getBufferSize() : 0;
  j["captured_bytes"] = snapshot.capturedBytes();
  j["region_count"] = snapshot.regions.size();
  j["thread_count"] = snapshot.threads.size();
  j["module_count"] = snapshot.modules.size();
  if (const std::optional<Truncation> &t = snapshot.truncation)
    j["truncated"] = Json{{"file_size", t->file_size},
                          {"expected_size", t->expected_size},
                          {"first_missing_address", hexAddress(t->first_missing_address)},
                          {"missing_bytes", t->missing_bytes}};
  return j;
}

Json detail::diagnosticsJson(const Diagnostics &diags) {
  Json list = Json::array();
  for (const Diagnostic &d : diags.warnings())
    list.push_back(Json{{"where", d.where}, {"message", d.message}});
  if (size_t n = diags.suppressed())
    list.push_back(Json{{"where", "diagnostics"},
                        {"message", std::to_string(n) + " more warnings suppressed"}});
  return list;
}

namespace {

/// What `info --json` prints, with an empty `regions` array (the regions are the bulk: a dump may
/// hold millions, and writeInfoJson streams them one at a time).
Json infoJsonWithoutRegions(const Snapshot &snapshot) {
  Json j;
  j["schema_version"] = kInfoSchemaVersion;
  j["tool"] = Json{{"name", kToolName}, {"version", toolVersion().str()}};
  j["dump"] = dumpSummaryJson(snapshot);

  Json threads = Json::array();
  for (const Thread &t : snapshot.threads) {
    Json tj;
    tj["tid"] = t.tid;
    tj["stack_pointer"] = hexAddress(t.stack_pointer);
    if (t.stack_end > t.stack_start) {
      tj["stack_start"] = hexAddress(t.stack_start);
      tj["stack_end"] = hexAddress(t.stack_end);
      tj["stack_source"] = sourceName(t.stack_source).str();
    }
    if (t.teb != 0)
      tj["teb"] = hexAddress(t.teb);
    threads.push_back(std::move(tj));
  }
  j["threads"] = std::move(threads);

  Json modules = Json::array();
  for (const Module &m : snapshot.modules) {
    Json mj;
    mj["path"] = m.path;
    mj["start"] = hexAddress(m.start);
    mj["end"] = hexAddress(m.end);
    if (!m.build_id.empty())
      mj["build_id"] = m.build_id;
    modules.push_back(std::move(mj));
  }
  j["modules"] = std::move(modules);

  j["regions"] = Json::array();

  ClassTotals totals = classTotals(snapshot);
  Json by_class;
  for (RegionClass c : kClasses) {
    auto i = static_cast<size_t>(c);
    by_class[className(c).str()] = Json{{"regions", totals.region_count[i]},
                                        {"mapped_bytes", totals.mapped[i]},
                                        {"captured_bytes", totals.captured[i]}};
  }
  j["totals"] =
      Json{{"by_class", std::move(by_class)}, {"captured_bytes", snapshot.capturedBytes()}};
  j["diagnostics"] = diagnosticsJson(snapshot.diagnostics);
  return j;
}

} // namespace

Json detail::infoJson(const Snapshot &snapshot) {
  Json j = infoJsonWithoutRegions(snapshot);
  Json &regions = j["regions"];
  for (const Region &r : snapshot.regions)
    regions.push_back(regionJson(r));
  return j;
}

void writeInfoJson(const Snapshot &snapshot, llvm::raw_ostream &out) {
  writeJsonStreamingArray(out, infoJsonWithoutRegions(snapshot), "regions", snapshot.regions.size(),
                          [&](size_t i) { return regionJson(snapshot.regions[i]); });
  out << "\n";
}

void writeInfoText(const Snapshot &snapshot, llvm::raw_ostream &out) {
  const ProcessInfo &p = snapshot.process;
  out << printable(snapshot.path) << ": " << formatName(snapshot.format).str() << ", "
      << osName(snapshot.system.os).str() << "/" << printable(snapshot.system.arch) << ", "
      << (snapshot.system.little_endian ? "little" : "big") << "-endian, "
      << snapshot.system.pointer_size * 8 << "-bit\n";
  out << "process: " << (p.name.empty() ? "(unknown)" : printable(p.name));
  if (p.pid)
    out << " (pid " << *p.pid << ")";
  out << "\n";
  if (!p.command_line.empty())
    out << "command line: " << printable(p.command_line) << "\n";
  out << "threads: " << snapshot.threads.size() << ", modules: " << snapshot.modules.size()
      << ", regions: " << snapshot.regions.size() << "\n\n";

  auto row = [&out](const std::string &start, const std::string &end, const std::string &size,
                    const std::string &perm, const std::string &cls, const std::string &source,
                    const std::string &captured, const std::string &file) {
    out << llvm::left_justify(start, 18) << ' ' << llvm::left_justify(end, 18) << ' '
        << llvm::right_justify(size, 10) << ' ' << llvm::left_justify(perm, 4) << ' '
        << llvm::left_justify(cls, 9) << ' ' << llvm::left_justify(source, 14) << ' '
        << llvm::right_justify(captured, 10) << "  " << file << "\n";
  };
  row("start", "end", "size", "perm", "class", "classed by", "captured", "file");
  for (const Region &r : snapshot.regions) {
    std::string captured = r.capture() == Capture::Full   ? "all"
                           : r.capture() == Capture::None ? "none"
                                                          : humanBytes(r.captured);
    row(hexAddress(r.start), hexAddress(r.end()), humanBytes(r.size), r.perms.str(),
        className(r.cls).str(), sourceName(r.class_source).str(), captured,
        printable(r.backing_file));
  }

  ClassTotals totals = classTotals(snapshot);
  out << "\ncaptured bytes by class:\n";
  auto total_row = [&out](const std::string &name, uint64_t regions, uint64_t captured) {
    out << "  " << llvm::left_justify(name, 10) << ' ' << llvm::format_decimal(regions, 5)
        << " regions " << llvm::right_justify(humanBytes(captured), 12) << " captured (" << captured
        << " bytes)\n";
  };
  for (RegionClass c : kClasses) {
    auto i = static_cast<size_t>(c);
    total_row(className(c).str(), totals.region_count[i], totals.captured[i]);
  }
  total_row("total", snapshot.regions.size(), snapshot.capturedBytes());
  std::vector<Diagnostic> warnings = snapshot.diagnostics.warnings();
  if (!warnings.empty()) {
    out << "\nwarnings:\n";
    for (const Diagnostic &d : warnings)
      out << "  " << printable(d.where) << ": " << printable(d.message) << "\n";
    if (size_t n = snapshot.diagnostics.suppressed())
      out << "  (" << n << " more suppressed)\n";
  }
}

} // namespace dumpsift
