// A fleet's dumps as normalized rows (docs/fleet.md): what `fleet rows` prints as JSONL and
// `fleet report` loads into SQLite, table by table with the same columns. One dump is one row of
// `dumps` and its rows in `labels`, `kinds`, `groups`, `group_kinds` and `findings`, all keyed by
// the dump's manifest id. Reports are read through the report layer's readReport.
#pragma once

#include "dumpsift/compare/figures.h"
#include "dumpsift/report/labels.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dumpsift {

/// One dump of a fleet: its manifest row, its status, and what its report says.
struct DumpRecord {
  std::string id;
  std::string dir; // the output directory, absolute
  size_t row = 0;
  std::string dump;      // as the status records it, else as the manifest writes it
  ReportLabels labels;   // the report's, else the manifest's
  std::string service;   // labels["service"] ("" when none)
  std::string version;   // labels["version"] ("" when none)
  std::string outcome;   // ok, truncated, bad-input, gave-up, or missing (no final status)
  unsigned attempts = 0; // as the status counts them
  std::string error;     // why it is not ok, one line
  std::string report;    // the report's path ("" when it has none that reads)
  std::string page;      // the dump's own page, when there is one (fleet task --html)
  std::optional<ReportFigures> figures; // ok and truncated dumps: what the report says
};

/// A key that orders versions as version numbers when compared as text: every run of digits is
/// written as the count of its digits (two digits) and the digits without leading zeros, the rest
/// as it is: "1.9" -> "011.019", "1.10" -> "011.0210", so 1.9 < 1.10 < 1.10-rc1 < 2.0.
std::string versionKey(llvm::StringRef version);

/// Reads the fleet output directory `dir` (the manifest copy `fleet task` keeps there, each row's
/// status and report) and gives each row's record to `visit`, in row order. A report that cannot
/// be read makes its row `missing`, with the reason. Fails when `dir` holds no manifest copy, or
/// when `visit` fails.
llvm::Error forEachDump(const std::string &dir,
                        llvm::function_ref<llvm::Error(DumpRecord &&)> visit);

/// The normalized tables: their names and columns, as both the JSONL rows and the SQLite tables
/// have them.
enum class ColumnType { Integer, Text };
struct Column {
  llvm::StringLiteral name;
  ColumnType type;
};
struct Table {
  llvm::StringLiteral name;
  std::vector<Column> columns;
  size_t key_columns; // the first ones make a row's key
};
/// dumps, labels, kinds, groups, group_kinds, findings.
const std::vector<Table> &fleetTables();

/// One row of one table: a value per column (null, an integer or text).
using Cell = std::variant<std::monostate, int64_t, std::string>;
struct TableRow {
  const Table *table;
  std::vector<Cell> cells;
};

/// The rows of `record` in every table, `dumps` first.
std::vector<TableRow> tableRows(const DumpRecord &record);

/// Writes `rows` as JSON lines: {"table": NAME, COLUMN: VALUE, ...}, columns in table order.
void writeRowsJsonl(const std::vector<TableRow> &rows, llvm::raw_ostream &out);

} // namespace dumpsift
