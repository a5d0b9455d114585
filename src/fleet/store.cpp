// The fleet database (store.h): SQLite's C API, the tables of records.h, and the views
// docs/fleet.md documents.
#include "dumpsift/fleet/store.h"

#include "dumpsift/fleet/records.h"
#include "dumpsift/support/error.h"

#include <algorithm>
#include <sqlite3.h>
#include <utility>

namespace dumpsift {

namespace {

/// The tables' layout (records.h) as this database writes it; a file of another layout is
/// refused rather than mixed.
constexpr int kSchemaVersion = 1;

/// The views (docs/fleet.md has each one's columns). A whole dump is one whose outcome is `ok`;
/// versions compare by version_key (versionKey in records.h), so 1.9 < 1.10.
constexpr const char *kViews = R"sql(
CREATE VIEW outcomes AS
  SELECT id, service, version, outcome, attempts, error, dump, page, version_key FROM dumps
  ORDER BY service, version_key, id;

CREATE VIEW outcome_counts AS
  SELECT outcome, COUNT(*) AS dumps FROM dumps GROUP BY outcome ORDER BY outcome;

CREATE VIEW whole_groups AS
  SELECT d.service, d.version, d.version_key, g.id, g.size, g.state, g.kind, g.count, g.bytes
  FROM groups g JOIN dumps d ON d.id = g.id WHERE d.outcome = 'ok';

CREATE VIEW recurring_groups AS
  WITH spans AS (
    SELECT service, size, state, kind, COUNT(*) AS dumps, SUM(count) AS buffers,
           SUM(bytes) AS bytes, MIN(version_key) AS first_key, MAX(version_key) AS last_key
    FROM whole_groups GROUP BY service, size, state, kind HAVING COUNT(*) >= 2)
  SELECT s.service, s.size, s.state, s.kind, s.dumps,
    (SELECT COUNT(*) FROM dumps w WHERE w.service = s.service AND w.outcome = 'ok'
       AND w.version_key >= s.first_key) AS whole_dumps_since_first,
    s.buffers, s.bytes,
    (SELECT group_concat(kind || ' x' || n, ', ') FROM (
       SELECT k.kind, SUM(k.count) AS n FROM group_kinds k JOIN dumps d ON d.id = k.id
       WHERE d.outcome = 'ok' AND d.service = s.service AND k.size = s.size
         AND k.state = s.state AND k.group_kind = s.kind
       GROUP BY k.kind ORDER BY n DESC, k.kind LIMIT 3)) AS dominant_kinds,
    (SELECT version FROM dumps v WHERE v.service = s.service AND v.version_key = s.first_key
       ORDER BY version LIMIT 1) AS first_version,
    (SELECT version FROM dumps v WHERE v.service = s.service AND v.version_key = s.last_key
       ORDER BY version LIMIT 1) AS last_version,
    s.first_key, s.last_key
  FROM spans s
  ORDER BY s.service, s.bytes DESC, s.size, s.state, s.kind;

CREATE VIEW kind_bytes AS
  WITH versions AS (
    SELECT service, version_key, MIN(version) AS version, COUNT(*) AS whole_dumps FROM dumps
    WHERE outcome = 'ok' GROUP BY service, version_key)
  SELECT v.service, v.version, k.kind, v.whole_dumps, COUNT(*) AS dumps,
         SUM(k.count) AS buffers, SUM(k.bytes) AS bytes, v.version_key
  FROM kinds k JOIN dumps d ON d.id = k.id AND d.outcome = 'ok'
  JOIN versions v ON v.service = d.service AND v.version_key = d.version_key
  GROUP BY v.service, v.version_key, k.kind
  ORDER BY v.service, v.version_key, bytes DESC, k.kind;

CREATE VIEW new_groups AS
  WITH firsts AS (
    SELECT service, size, state, kind, MIN(version_key) AS first_key FROM whole_groups
    GROUP BY service, size, state, kind),
  service_firsts AS (
    SELECT service, MIN(version_key) AS first_key FROM dumps WHERE outcome = 'ok'
    GROUP BY service)
  SELECT g.service, MIN(g.version) AS version, g.size, g.state, g.kind, COUNT(*) AS dumps,
         SUM(g.bytes) AS bytes, g.version_key
  FROM whole_groups g
  JOIN firsts f ON f.service = g.service AND f.size = g.size AND f.state = g.state
    AND f.kind = g.kind AND f.first_key = g.version_key
  JOIN service_firsts s ON s.service = g.service AND s.first_key < g.version_key
  GROUP BY g.service, g.version_key, g.size, g.state, g.kind
  ORDER BY g.service, g.version_key, bytes DESC, g.size, g.state, g.kind;

CREATE VIEW waste_by_type AS
  SELECT f.type, COUNT(*) AS findings, COUNT(DISTINCT f.id) AS dumps, SUM(f.bytes) AS bytes,
         MAX(f.bytes) AS largest
  FROM findings f JOIN dumps d ON d.id = f.id WHERE d.outcome = 'ok'
  GROUP BY f.type ORDER BY largest DESC, f.type;

CREATE VIEW top_waste AS
  SELECT f.type,
         ROW_NUMBER() OVER (PARTITION BY f.type ORDER BY f.bytes DESC, f.id, f.seq) AS rank,
         f.id, d.service, d.version, f.bytes, f.explanation, d.page
  FROM findings f JOIN dumps d ON d.id = f.id WHERE d.outcome = 'ok'
  ORDER BY f.type, rank;
)sql";

constexpr const char *kViewNames[] = {"outcomes",         "outcome_counts", "whole_groups",
                                      "recurring_groups", "kind_bytes",     "new_groups",
                                      "waste_by_type",    "top_waste"};

constexpr const char *kIndexes = R"sql(
CREATE INDEX IF NOT EXISTS dumps_by_service ON dumps(service, outcome, version_key);
CREATE INDEX IF NOT EXISTS groups_by_group ON groups(size, state, kind);
CREATE INDEX IF NOT EXISTS group_kinds_by_group ON group_kinds(size, state, group_kind);
)sql";

/// `CREATE TABLE` of `table`, its key columns the primary key.
std::string createTableSql(const Table &table) {
  std::string sql = "CREATE TABLE IF NOT EXISTS " + table.name.str() + "(";
  for (const Column &column : table.columns)
    sql += column.name.str() + (column.type == ColumnType::Integer ? " INTEGER, " : " TEXT, ");
  sql += "PRIMARY KEY(";
  for (size_t i = 0; i < table.key_columns; ++i)
    sql += (i ? ", " : "") + table.columns[i].name.str();
  return sql + "))";
}

/// A prepared statement, finalized when it goes.
class Statement {
public:
  Statement() = default;
  explicit Statement(sqlite3_stmt *statement) : statement_(statement) {}
  Statement(Statement &&other) noexcept : statement_(std::exchange(other.statement_, nullptr)) {}
  Statement &operator=(Statement &&other) noexcept {
    std::swap(statement_, other.statement_);
    return *this;
  }
  ~Statement() { sqlite3_finalize(statement_); }
  sqlite3_stmt *get() const { return statement_; }

private:
  sqlite3_stmt *statement_ = nullptr;
};

/// Column `i` of the current row as text ("" for null) or as a count (0 for null).
std::string textAt(sqlite3_stmt *statement, int i) {
  const unsigned char *text = sqlite3_column_text(statement, i);
  return text ? reinterpret_cast<const char *>(text) : "";
}
uint64_t countAt(sqlite3_stmt *statement, int i) {
  return uint64_t(std::max<sqlite3_int64>(0, sqlite3_column_int64(statement, i)));
}

} // namespace

struct FleetStore::Impl {
  std::string path;
  sqlite3 *db = nullptr;

  ~Impl() { sqlite3_close(db); }

  /// An error naming the database and SQLite's message.
  llvm::Error failure(const std::string &what) const {
    return llvm::createFileError(path, createError(what + ": " + sqlite3_errmsg(db)));
  }

  llvm::Error exec(const std::string &sql) {
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      return failure("cannot run SQL");
    return llvm::Error::success();
  }

  llvm::Expected<Statement> prepare(const std::string &sql) {
    sqlite3_stmt *statement = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK)
      return failure("cannot prepare a query");
    return Statement(statement);
  }

  /// Runs `statement` to its end, calling `row` for each row it gives.
  template <typename RowFn> llvm::Error each(const Statement &statement, RowFn row) {
    for (;;) {
      const int step = sqlite3_step(statement.get());
      if (step == SQLITE_DONE)
        return llvm::Error::success();
      if (step != SQLITE_ROW)
        return failure("cannot read");
      row(statement.get());
    }
  }

  /// The tables, indexes and views, in a new file or one of this schema.
  llvm::Error prepareSchema() {
    llvm::Expected<Statement> counted = prepare("SELECT COUNT(*) FROM sqlite_master");
    if (!counted)
      return counted.takeError();
    uint64_t objects = 0;
    if (llvm::Error e = each(*counted, [&](sqlite3_stmt *s) { objects = countAt(s, 0); }))
      return e;
    llvm::Expected<Statement> versioned = prepare("PRAGMA user_version");
    if (!versioned)
      return versioned.takeError();
    uint64_t version = 0;
    if (llvm::Error e = each(*versioned, [&](sqlite3_stmt *s) { version = countAt(s, 0); }))
      return e;
    if (objects && version != uint64_t(kSchemaVersion))
      return llvm::createFileError(
          path, createError("not a fleet database of this dumpsift (its user_version is " +
                            std::to_string(version) + ", not " + std::to_string(kSchemaVersion) +
                            "): give another --db, or delete it and load the directories again"));
    std::string sql = "BEGIN;\n";
    for (const Table &table : fleetTables())
      sql += createTableSql(table) + ";\n";
    sql += kIndexes;
    for (const char *view : kViewNames)
      sql += std::string("DROP VIEW IF EXISTS ") + view + ";\n";
    sql += kViews;
    sql += "PRAGMA user_version = " + std::to_string(kSchemaVersion) + ";\nCOMMIT;";
    return exec(sql);
  }
};

FleetStore::FleetStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FleetStore::~FleetStore() = default;

llvm::Expected<std::unique_ptr<FleetStore>> FleetStore::open(const std::string &path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (sqlite3_open_v2(path.c_str(), &impl->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK)
    return impl->failure("cannot open the database");
  sqlite3_busy_timeout(impl->db, 10000);
  if (llvm::Error e = impl->prepareSchema())
    return e;
  return std::unique_ptr<FleetStore>(new FleetStore(std::move(impl)));
}

llvm::Expected<size_t> FleetStore::load(const std::vector<std::string> &dirs) {
  Impl &store = *impl_;
  const std::vector<Table> &tables = fleetTables();
  std::vector<Statement> deletes, inserts;
  for (const Table &table : tables) {
    llvm::Expected<Statement> remove =
        store.prepare("DELETE FROM " + table.name.str() + " WHERE id = ?1");
    if (!remove)
      return remove.takeError();
    deletes.push_back(std::move(*remove));
    std::string sql = "INSERT INTO " + table.name.str() + " VALUES(";
    for (size_t i = 0; i < table.columns.size(); ++i)
      sql += (i ? ", ?" : "?") + std::to_string(i + 1);
    llvm::Expected<Statement> insert = store.prepare(sql + ")");
    if (!insert)
      return insert.takeError();
    inserts.push_back(std::move(*insert));
  }
  auto run = [&](const Statement &statement) -> llvm::Error {
    const int step = sqlite3_step(statement.get());
    sqlite3_reset(statement.get());
    sqlite3_clear_bindings(statement.get());
    if (step != SQLITE_DONE)
      return store.failure("cannot write");
    return llvm::Error::success();
  };
  auto replace = [&](DumpRecord &&record) -> llvm::Error {
    for (const Statement &remove : deletes) {
      sqlite3_bind_text(remove.get(), 1, record.id.c_str(), int(record.id.size()),
                        SQLITE_TRANSIENT);
      if (llvm::Error e = run(remove))
        return e;
    }
    for (const TableRow &row : tableRows(record)) {
      const Statement &insert = inserts[size_t(row.table - tables.data())];
      for (size_t i = 0; i < row.cells.size(); ++i) {
        const int at = int(i + 1);
        if (const auto *n = std::get_if<int64_t>(&row.cells[i]))
          sqlite3_bind_int64(insert.get(), at, *n);
        else if (const auto *s = std::get_if<std::string>(&row.cells[i]))
          sqlite3_bind_text(insert.get(), at, s->c_str(), int(s->size()), SQLITE_TRANSIENT);
        else
          sqlite3_bind_null(insert.get(), at);
      }
      if (llvm::Error e = run(insert))
        return e;
    }
    return llvm::Error::success();
  };
  if (llvm::Error e = store.exec("BEGIN IMMEDIATE"))
    return e;
  size_t loaded = 0;
  llvm::Error result = llvm::Error::success();
  for (const std::string &dir : dirs) {
    result = forEachDump(dir, [&](DumpRecord &&record) {
      ++loaded;
      return replace(std::move(record));
    });
    if (result)
      break;
  }
  if (result) {
    (void)store.exec("ROLLBACK");
    return result;
  }
  if (llvm::Error e = store.exec("COMMIT"))
    return e;
  return loaded;
}

llvm::Expected<FleetAnswers> FleetStore::answers(size_t top) {
  Impl &store = *impl_;
  FleetAnswers answers;
  auto query = [&](const std::string &sql, auto row) -> llvm::Error {
    llvm::Expected<Statement> statement = store.prepare(sql);
    if (!statement)
      return statement.takeError();
    return store.each(*statement, row);
  };
  if (llvm::Error e = query("SELECT outcome, dumps FROM outcome_counts", [&](sqlite3_stmt *s) {
        answers.outcome_counts[textAt(s, 0)] = countAt(s, 1);
      }))
    return e;
  if (llvm::Error e = query("SELECT id, service, version, outcome, error, dump, page, attempts "
                            "FROM outcomes",
                            [&](sqlite3_stmt *s) {
                              answers.outcomes.push_back({textAt(s, 0), textAt(s, 1), textAt(s, 2),
                                                          textAt(s, 3), textAt(s, 4), textAt(s, 5),
                                                          textAt(s, 6), countAt(s, 7)});
                            }))
    return e;
  if (llvm::Error e = query(
          "SELECT service, size, state, kind, dumps, whole_dumps_since_first, buffers, bytes, "
          "dominant_kinds, first_version, last_version FROM recurring_groups",
          [&](sqlite3_stmt *s) {
            FleetAnswers::RecurringGroup g;
            g.service = textAt(s, 0);
            g.size = countAt(s, 1);
            g.state = textAt(s, 2);
            g.kind = textAt(s, 3);
            g.dumps = countAt(s, 4);
            g.whole_dumps_since_first = countAt(s, 5);
            g.buffers = countAt(s, 6);
            g.bytes = countAt(s, 7);
            g.dominant_kinds = textAt(s, 8);
            g.first_version = textAt(s, 9);
            g.last_version = textAt(s, 10);
            answers.recurring_groups.push_back(std::move(g));
          }))
    return e;
  {
    llvm::Expected<Statement> holders = store.prepare(
        "SELECT g.id, g.version, d.page FROM whole_groups g JOIN dumps d ON d.id = g.id "
        "WHERE g.service = ?1 AND g.size = ?2 AND g.state = ?3 AND g.kind = ?4 "
        "ORDER BY g.version_key DESC, g.id LIMIT 20");
    if (!holders)
      return holders.takeError();
    for (FleetAnswers::RecurringGroup &g : answers.recurring_groups) {
      sqlite3_bind_text(holders->get(), 1, g.service.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(holders->get(), 2, sqlite3_int64(g.size));
      sqlite3_bind_text(holders->get(), 3, g.state.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(holders->get(), 4, g.kind.c_str(), -1, SQLITE_TRANSIENT);
      if (llvm::Error e = store.each(*holders, [&](sqlite3_stmt *s) {
            g.holders.push_back({textAt(s, 0), textAt(s, 1), textAt(s, 2)});
          }))
        return e;
      sqlite3_reset(holders->get());
    }
  }
  if (llvm::Error e = query("SELECT service, version, kind, whole_dumps, dumps, buffers, bytes "
                            "FROM kind_bytes",
                            [&](sqlite3_stmt *s) {
                              answers.kind_bytes.push_back(
                                  {textAt(s, 0), textAt(s, 1), textAt(s, 2), countAt(s, 3),
                                   countAt(s, 4), countAt(s, 5), countAt(s, 6)});
                            }))
    return e;
  if (llvm::Error e = query("SELECT service, version, size, state, kind, dumps, bytes "
                            "FROM new_groups",
                            [&](sqlite3_stmt *s) {
                              answers.new_groups.push_back(
                                  {textAt(s, 0), textAt(s, 1), countAt(s, 2), textAt(s, 3),
                                   textAt(s, 4), countAt(s, 5), countAt(s, 6)});
                            }))
    return e;
  if (llvm::Error e = query(
          "SELECT type, findings, dumps, bytes, largest FROM waste_by_type", [&](sqlite3_stmt *s) {
            answers.waste_by_type.push_back(
                {textAt(s, 0), countAt(s, 1), countAt(s, 2), countAt(s, 3), countAt(s, 4)});
          }))
    return e;
  if (llvm::Error e = query("SELECT type, rank, id, service, version, page, bytes, explanation "
                            "FROM top_waste WHERE rank <= " +
                                std::to_string(top),
                            [&](sqlite3_stmt *s) {
                              answers.top_waste.push_back(
                                  {textAt(s, 0), countAt(s, 1), textAt(s, 2), textAt(s, 3),
                                   textAt(s, 4), textAt(s, 5), countAt(s, 6), textAt(s, 7)});
                            }))
    return e;
  return answers;
}

} // namespace dumpsift
