// A fleet's reports aggregated in one SQLite file (docs/fleet.md): the normalized tables
// (records.h), and views that answer the fleet questions, which people can query with `sqlite3`
// themselves. SQLite stays inside this layer: nothing here names it.
#pragma once

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift {

/// What the views answer, as `fleet report` prints it and writes it as JSON and HTML.
struct FleetAnswers {
  /// `outcomes`: every dump, by service, version (as version numbers) and id.
  struct Outcome {
    std::string id, service, version, outcome, error, dump, page;
    uint64_t attempts = 0;
  };
  /// `recurring_groups`: a size group that two or more whole dumps of a service hold.
  struct RecurringGroup {
    std::string service;
    uint64_t size = 0;
    std::string state, kind;              // kind: "" unless the reports group by size and kind
    uint64_t dumps = 0;                   // whole dumps of the service that hold it
    uint64_t whole_dumps_since_first = 0; // whole dumps of the service from its first version on
    uint64_t buffers = 0, bytes = 0;      // summed over those dumps
    std::string dominant_kinds;           // "text x12, zero x3": its kinds over those dumps
    std::string first_version, last_version;
    struct Holder {
      std::string id, version, page;
    };
    std::vector<Holder> holders; // the dumps that hold it, newest version first (at most 20)
  };
  /// `kind_bytes`: bytes of each kind per service and version, over its whole dumps.
  struct KindBytes {
    std::string service, version, kind;
    uint64_t whole_dumps = 0; // whole dumps of that service and version
    uint64_t dumps = 0;       // of which hold the kind
    uint64_t buffers = 0, bytes = 0;
  };
  /// `new_groups`: a size group a version of a service holds that no earlier version's whole
  /// dumps hold (the service's first version has none).
  struct NewGroup {
    std::string service, version;
    uint64_t size = 0;
    std::string state, kind;
    uint64_t dumps = 0, bytes = 0;
  };
  /// `waste_by_type`: each finding type's findings in whole dumps (never summed across types).
  struct WasteType {
    std::string type;
    uint64_t findings = 0, dumps = 0, bytes = 0, largest = 0;
  };
  /// `top_waste`: the largest findings of each type.
  struct Waste {
    std::string type;
    uint64_t rank = 0;
    std::string id, service, version, page;
    uint64_t bytes = 0;
    std::string explanation;
  };

  std::map<std::string, uint64_t> outcome_counts; // outcome -> dumps
  std::vector<Outcome> outcomes;
  std::vector<RecurringGroup> recurring_groups;
  std::vector<KindBytes> kind_bytes;
  std::vector<NewGroup> new_groups;
  std::vector<WasteType> waste_by_type;
  std::vector<Waste> top_waste; // by type, then rank
};

class FleetStore {
public:
  /// Opens (creating it when absent) the fleet database at `path` (":memory:" for one in memory):
  /// its tables, indexes and views. A file made by another version of its schema is refused, with
  /// what to do.
  static llvm::Expected<std::unique_ptr<FleetStore>> open(const std::string &path);
  ~FleetStore();
  FleetStore(const FleetStore &) = delete;
  FleetStore &operator=(const FleetStore &) = delete;

  /// Loads every dump of the fleet output directories `dirs` (forEachDump), in one transaction:
  /// each dump's rows replace the rows that dump had (by id); other dumps stay. Nothing changes
  /// when it fails. Returns the number of dumps loaded.
  llvm::Expected<size_t> load(const std::vector<std::string> &dirs);

  /// What the views say, with at most `top` findings per type in `top_waste`.
  llvm::Expected<FleetAnswers> answers(size_t top = 10);

private:
  struct Impl;
  explicit FleetStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace dumpsift
