#include "dumpsift/heap/walker.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace dumpsift::tool {

namespace {
struct HeapArgs {
  std::string dump;
  RawFilters filters;
  std::vector<std::string> walkers;
  bool json = false;
};

// What `heap` lists per allocation: compact, since a heap may hold millions.
struct Row {
  uint64_t address, size, chunk, arena;
  uint16_t walker;
  AllocState state;
  bool mmapped;
};

/// Builds stdout's text in a large buffer and writes it in big blocks: a heap may hold millions
/// of allocations, one line each, and formatting each with printf costs more than the walk.
class LineWriter {
public:
  LineWriter() { text_.reserve(kFlushAt + 4096); }
  ~LineWriter() { flush(); }
  LineWriter(const LineWriter &) = delete;
  LineWriter &operator=(const LineWriter &) = delete;

  LineWriter &text(llvm::StringRef s) {
    text_.append(s.data(), s.size());
    return *this;
  }
  /// "0x" and lowercase hex digits without leading zeros, as hexAddress() writes them.
  LineWriter &hex(uint64_t value) {
    char digits[18];
    char *end = digits + sizeof digits, *p = end;
    do {
      *--p = "0123456789abcdef"[value & 15];
      value >>= 4;
    } while (value);
    *--p = 'x';
    *--p = '0';
    text_.append(p, static_cast<size_t>(end - p));
    return *this;
  }
  /// Decimal digits, right-justified in `width` columns as printf's "%Nllu" does.
  LineWriter &decimal(uint64_t value, size_t width = 0) {
    char digits[20];
    char *end = digits + sizeof digits, *p = end;
    do {
      *--p = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value);
    auto n = static_cast<size_t>(end - p);
    if (n < width)
      text_.append(width - n, ' ');
    text_.append(p, n);
    return *this;
  }
  /// Pads what was written since `mark` with spaces on the right to `width` characters, as
  /// printf's "%-Ns" does.
  LineWriter &padFrom(size_t mark, size_t width) {
    size_t written = text_.size() - mark;
    if (written < width)
      text_.append(width - written, ' ');
    return *this;
  }
  size_t mark() const { return text_.size(); }
  /// Ends a line; writes the buffer out when it is full.
  void endLine() {
    text_.push_back('\n');
    flushIfFull();
  }
  void flushIfFull() {
    if (text_.size() >= kFlushAt)
      flush();
  }
  void flush() {
    if (!text_.empty())
      std::fwrite(text_.data(), 1, text_.size(), stdout);
    text_.clear();
  }

private:
  static constexpr size_t kFlushAt = 1 << 20;
  std::string text_;
};

/// Appends what `write` writes, left-justified in `width` columns.
template <typename Write> void column(LineWriter &out, size_t width, Write write) {
  size_t mark = out.mark();
  write();
  out.padFrom(mark, width);
}

llvm::Expected<int> runHeap(const HeapArgs &args) {
  AnalyzeOptions filters;
  if (llvm::Error e = resolveFilters(args.filters, filters))
    return e;
  if (!filters.kinds.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--kind needs content sniffing: use 'dumpsift analyze'");
  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return fileError(args.dump, snapshot.takeError());
  AddressSpace memory(**snapshot);

  Diagnostics diags;
  std::vector<HeapWalkResult> results;
  std::vector<Row> rows;
  std::vector<std::string> names;
  for (const std::unique_ptr<HeapWalker> &walker : heapWalkers()) {
    if (!args.walkers.empty() &&
        std::find(args.walkers.begin(), args.walkers.end(), walker->name()) == args.walkers.end())
      continue;
    if (!walker->detect(memory))
      continue;
    auto index = static_cast<uint16_t>(names.size());
    auto result = walker->walk(
        memory,
        [&](const Allocation &a) {
          if (a.size < filters.min_size || a.size > filters.max_size)
            return;
          if (filters.state && *filters.state != a.state)
            return;
          rows.push_back({a.address, a.size, a.chunk_address, a.arena, index, a.state, a.mmapped});
        },
        diags);
    if (!result) {
      diags.warn(walker->name().str(), llvm::toString(result.takeError()));
      continue;
    }
    names.push_back(walker->name().str());
    results.push_back(std::move(*result));
  }
  auto by_address = [](const Row &a, const Row &b) { return a.address < b.address; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_address)) // one walker emits in order
    std::sort(rows.begin(), rows.end(), by_address);

  if (args.json) {
    // Streamed: the allocation list can be far larger than anything worth holding as a tree.
    Json head;
    head["schema_version"] = kReportSchemaVersion;
    head["dump"] = dumpSummaryJson(**snapshot);
    Json heaps = Json::array();
    for (const HeapWalkResult &h : results) {
      Json hj{{"walker", h.walker}};
      Json facts = Json::object();
      for (const auto &[k, v] : h.facts)
        facts[k] = v;
      hj["facts"] = std::move(facts);
      hj["stats"] =
          Json{{"used_count", h.stats.used_count},       {"used_bytes", h.stats.used_bytes},
               {"free_count", h.stats.free_count},       {"free_bytes", h.stats.free_bytes},
               {"unknown_count", h.stats.unknown_count}, {"unknown_bytes", h.stats.unknown_bytes}};
      Json areas = Json::array();
      for (const HeapArea &a : h.areas)
        areas.push_back(Json{{"kind", a.kind},
                             {"start", hexAddress(a.start)},
                             {"size", a.size},
                             {"arena", hexAddress(a.arena)}});
      hj["areas"] = std::move(areas);
      heaps.push_back(std::move(hj));
    }
    head["heaps"] = std::move(heaps);
    Json diag = diagnosticsJson((*snapshot)->diagnostics);
    for (Json &d : diagnosticsJson(diags))
      diag.push_back(std::move(d));
    head["diagnostics"] = std::move(diag);
    std::string text = head.dump(2);
    text.pop_back(); // reopen the object to append the streamed array
    std::cout << text << ",\n  \"allocations\": [";
    std::cout.flush();
    {
      LineWriter out;
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row &r = rows[i];
        out.text(i ? ",\n    {\"address\": \"" : "\n    {\"address\": \"")
            .hex(r.address)
            .text("\", \"size\": ")
            .decimal(r.size)
            .text(", \"chunk\": \"")
            .hex(r.chunk)
            .text("\", \"state\": \"")
            .text(stateName(r.state))
            .text(r.mmapped ? "\", \"mmapped\": true, \"arena\": \""
                            : "\", \"mmapped\": false, \"arena\": \"")
            .hex(r.arena)
            .text("\", \"walker\": \"")
            .text(names[r.walker])
            .text("\"}");
        out.flushIfFull();
      }
    }
    std::fflush(stdout);
    std::cout << (rows.empty() ? "]\n}\n" : "\n  ]\n}\n");
    return kExitOk;
  }

  std::cout << (*snapshot)->path << ": " << formatName((*snapshot)->format).str() << " "
            << (*snapshot)->system.os << "/" << (*snapshot)->system.arch << "\n";
  if (results.empty())
    std::cout << "no heap recognised\n";
  for (const HeapWalkResult &h : results) {
    std::cout << h.walker << ":";
    for (const auto &[k, v] : h.facts)
      std::cout << " " << k << "=" << v;
    std::cout << "\n  used " << h.stats.used_count << " (" << humanBytes(h.stats.used_bytes)
              << "), free " << h.stats.free_count << " (" << humanBytes(h.stats.free_bytes)
              << "), unknown " << h.stats.unknown_count << " (" << humanBytes(h.stats.unknown_bytes)
              << ")\n";
    for (const HeapArea &a : h.areas)
      std::cout << "  " << a.kind << " " << hexAddress(a.start) << "-"
                << hexAddress(a.start + a.size) << " (" << humanBytes(a.size) << ") arena "
                << hexAddress(a.arena) << "\n";
  }
  std::vector<Diagnostic> warnings = (*snapshot)->diagnostics.warnings();
  for (const Diagnostic &d : diags.warnings())
    warnings.push_back(d);
  for (const Diagnostic &d : warnings)
    std::cout << "warning: " << d.where << ": " << d.message << "\n";
  std::cout << "\n" << rows.size() << " allocations of at least " << filters.min_size << " bytes\n";
  std::printf("%-18s %12s %-7s %-7s %-18s %s\n", "address", "size", "state", "mmapped", "arena",
              "walker");
  std::fflush(stdout);
  // The same columns as the header's printf format, written without printf (see LineWriter).
  LineWriter out;
  for (const Row &r : rows) {
    column(out, 18, [&] { out.hex(r.address); });
    out.text(" ");
    out.decimal(r.size, 12).text(" ");
    column(out, 7, [&] { out.text(stateName(r.state)); });
    out.text(" ");
    column(out, 7, [&] { out.text(r.mmapped ? "yes" : "no"); });
    out.text(" ");
    column(out, 18, [&] { out.hex(r.arena); });
    out.text(" ").text(names[r.walker]);
    out.endLine();
  }
  out.flush();
  std::fflush(stdout);
  return kExitOk;
}
} // namespace

void addHeapCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<HeapArgs>();
  CLI::App *cmd =
      app.add_subcommand("heap", "Walk the heaps: arenas, counts and bytes used/free, and the "
                                 "allocations (filtered by size and state) by address");
  cmd->add_option("dump", args->dump, "ELF core or minidump")->required();
  cmd->add_option("--min-size", args->filters.min_size, "Smallest allocation to list")
      ->capture_default_str();
  cmd->add_option("--max-size", args->filters.max_size, "Largest allocation to list");
  cmd->add_option("--state", args->filters.state, "used, free, unknown or all")
      ->capture_default_str();
  cmd->add_option("--walker", args->walkers, "Only this heap walker (repeatable)");
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->callback([&runner, args] { runner = [args] { return runHeap(*args); }; });
}

} // namespace dumpsift::tool
