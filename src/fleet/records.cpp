// A fleet's dumps as normalized rows (records.h).
#include "dumpsift/fleet/records.h"

#include "dumpsift/fleet/manifest.h"
#include "dumpsift/fleet/row_status.h"
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/utf8.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

namespace {

/// The figures of the report at `path`; an error names the file.
llvm::Expected<SavedReport> readReportFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createFileError(path, llvm::errorCodeToError(buffer.getError()));
  llvm::Expected<SavedReport> report = readReport((*buffer)->getBuffer());
  if (!report)
    return llvm::createFileError(path, report.takeError());
  return report;
}

/// The record of `row` of the output directory `dir` (absolute).
DumpRecord recordOf(const ManifestRow &row, const std::string &dir) {
  DumpRecord record;
  record.id = row.id;
  record.dir = dir;
  record.row = row.index;
  record.dump = row.dump;
  record.labels = row.labels;
  record.outcome = "missing";
  llvm::Expected<std::optional<RowStatus>> status = readStatus(statusPath(dir, row.id));
  if (!status) {
    record.error = "its status cannot be read: " + describeFailure(status.takeError()).message;
  } else if (!*status) {
    record.error = "not run";
  } else {
    const RowStatus &s = **status;
    record.dump = s.dump;
    record.attempts = s.attempts;
    if (!isFinal(s.outcome)) {
      record.error = "not final: " + outcomeName(s.outcome).str() + " after " +
                     std::to_string(s.attempts) + (s.attempts == 1 ? " attempt" : " attempts") +
                     (s.error.empty() ? "" : ": " + s.error);
    } else {
      record.outcome = outcomeName(s.outcome).str();
      record.error = s.error;
    }
  }
  if (record.outcome == "ok" || record.outcome == "truncated") {
    const std::string report_path = reportPath(dir, row.id);
    llvm::Expected<SavedReport> report = readReportFile(report_path);
    if (!report) {
      record.outcome = "missing";
      record.error = "its report cannot be read: " + describeFailure(report.takeError()).message;
    } else {
      record.report = report_path;
      if (!report->labels.empty())
        record.labels = report->labels;
      record.figures = std::move(report->figures);
    }
  }
  if (auto it = record.labels.find("service"); it != record.labels.end())
    record.service = it->second;
  if (auto it = record.labels.find("version"); it != record.labels.end())
    record.version = it->second;
  const std::string page = pagePath(dir, row.id);
  if (llvm::sys::fs::exists(page))
    record.page = page;
  return record;
}

Cell text(llvm::StringRef value) {
  return toValidUtf8(value);
}

Cell integer(uint64_t value) {
  return int64_t(value);
}

} // namespace

std::string versionKey(llvm::StringRef version) {
  std::string key;
  for (size_t i = 0; i < version.size();) {
    if (!llvm::isDigit(version[i])) {
      key += version[i++];
      continue;
    }
    size_t end = i;
    while (end < version.size() && llvm::isDigit(version[end]))
      ++end;
    llvm::StringRef digits = version.slice(i, end).ltrim('0');
    if (digits.empty())
      digits = "0";
    char length[8];
    std::snprintf(length, sizeof length, "%02zu", std::min<size_t>(digits.size(), 99));
    key += length;
    key += digits.str();
    i = end;
  }
  return key;
}

llvm::Error forEachDump(const std::string &dir,
                        llvm::function_ref<llvm::Error(DumpRecord &&)> visit) {
  llvm::SmallString<256> absolute(dir);
  llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  const std::string copy = manifestCopyPath(absolute);
  if (!llvm::sys::fs::exists(copy))
    return llvm::createFileError(
        dir, createError("not a fleet directory: it has no manifest.jsonl (`dumpsift fleet task "
                         "--out DIR` writes it)"));
  llvm::Expected<Manifest> manifest = readManifest(copy);
  if (!manifest)
    return manifest.takeError();
  for (const ManifestRow &row : manifest->rows)
    if (llvm::Error e = visit(recordOf(row, absolute.str().str())))
      return e;
  return llvm::Error::success();
}

const std::vector<Table> &fleetTables() {
  using T = ColumnType;
  static const std::vector<Table> tables = {
      {"dumps",
       {{"id", T::Text},
        {"dir", T::Text},
        {"row", T::Integer},
        {"dump", T::Text},
        {"service", T::Text},
        {"version", T::Text},
        {"version_key", T::Text},
        {"outcome", T::Text},
        {"attempts", T::Integer},
        {"error", T::Text},
        {"missing_bytes", T::Integer},
        {"buffers", T::Integer},
        {"buffer_bytes", T::Integer},
        {"warnings", T::Integer},
        {"report", T::Text},
        {"page", T::Text}},
       1},
      {"labels", {{"id", T::Text}, {"key", T::Text}, {"value", T::Text}}, 2},
      {"kinds",
       {{"id", T::Text}, {"kind", T::Text}, {"count", T::Integer}, {"bytes", T::Integer}},
       2},
      {"groups",
       {{"id", T::Text},
        {"size", T::Integer},
        {"state", T::Text},
        {"kind", T::Text},
        {"count", T::Integer},
        {"bytes", T::Integer}},
       4},
      {"group_kinds",
       {{"id", T::Text},
        {"size", T::Integer},
        {"state", T::Text},
        {"group_kind", T::Text},
        {"kind", T::Text},
        {"count", T::Integer}},
       5},
      {"findings",
       {{"id", T::Text},
        {"seq", T::Integer},
        {"type", T::Text},
        {"bytes", T::Integer},
        {"explanation", T::Text}},
       2},
  };
  return tables;
}

std::vector<TableRow> tableRows(const DumpRecord &record) {
  const std::vector<Table> &tables = fleetTables();
  const Table &dumps = tables[0], &labels = tables[1], &kinds = tables[2], &groups = tables[3],
              &group_kinds = tables[4], &findings = tables[5];
  const std::optional<ReportFigures> &figures = record.figures;
  auto optional_text = [](const std::string &value) {
    return value.empty() ? Cell() : text(value);
  };
  Cell missing_bytes, buffers, buffer_bytes, warnings;
  if (figures) {
    if (figures->truncated)
      missing_bytes = integer(figures->truncated->missing_bytes);
    buffers = integer(figures->buffers.count);
    buffer_bytes = integer(figures->buffers.bytes);
    warnings = integer(figures->warnings);
  }
  std::vector<TableRow> rows;
  rows.push_back({&dumps,
                  {text(record.id), text(record.dir), integer(record.row), text(record.dump),
                   text(record.service), text(record.version), text(versionKey(record.version)),
                   text(record.outcome), integer(record.attempts), optional_text(record.error),
                   missing_bytes, buffers, buffer_bytes, warnings, optional_text(record.report),
                   optional_text(record.page)}});
  for (const auto &[key, value] : record.labels)
    rows.push_back({&labels, {text(record.id), text(key), text(value)}});
  if (!figures)
    return rows;
  for (const auto &[kind, tally] : figures->by_kind)
    rows.push_back(
        {&kinds, {text(record.id), text(kind), integer(tally.count), integer(tally.bytes)}});
  for (const ReportFigures::Group &g : figures->groups) {
    rows.push_back({&groups,
                    {text(record.id), integer(g.size), text(g.state), text(g.kind),
                     integer(g.count), integer(g.total_bytes)}});
    for (const auto &[kind, count] : g.kinds)
      rows.push_back({&group_kinds,
                      {text(record.id), integer(g.size), text(g.state), text(g.kind), text(kind),
                       integer(count)}});
  }
  for (size_t i = 0; i < figures->findings.size(); ++i) {
    const ReportFigures::FindingEntry &f = figures->findings[i];
    rows.push_back(
        {&findings,
         {text(record.id), integer(i), text(f.type), integer(f.bytes), text(f.explanation)}});
  }
  return rows;
}

void writeRowsJsonl(const std::vector<TableRow> &rows, llvm::raw_ostream &out) {
  for (const TableRow &row : rows) {
    llvm::json::OStream json(out);
    json.object([&] {
      json.attribute("table", row.table->name);
      for (size_t i = 0; i < row.cells.size(); ++i) {
        json.attributeBegin(row.table->columns[i].name);
        std::visit(
            [&](const auto &value) {
              using V = std::decay_t<decltype(value)>;
              if constexpr (std::is_same_v<V, std::monostate>)
                json.value(nullptr);
              else
                json.value(value);
            },
            row.cells[i]);
        json.attributeEnd();
      }
    });
    out << "\n";
  }
}

} // namespace dumpsift
