#include "dumpsift/heap/walker.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/NativeFormatting.h"
#include "llvm/Support/raw_ostream.h"

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
  bool quiet = false;
  std::string exe;
};

// What `heap` lists per allocation: compact, since a heap may hold millions.
struct Row {
  uint64_t address, size, chunk, arena;
  uint16_t walker;
  AllocState state;
  bool mmapped;
};

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
  (*snapshot)->executable_file = args.exe;
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal());

  Diagnostics diags;
  std::vector<Row> rows;
  std::vector<HeapWalkResult> results = walkHeaps(
      memory, args.walkers,
      [&](uint16_t heap, const Allocation &a) {
        if (a.size < filters.min_size || a.size > filters.max_size)
          return;
        if (filters.state && *filters.state != a.state)
          return;
        rows.push_back({a.address, a.size, a.chunk_address, a.arena, heap, a.state, a.mmapped});
      },
      diags, [&](llvm::StringRef phase, uint64_t d, uint64_t t) { progress.update(phase, d, t); });
  progress.finish();
  auto by_address = [](const Row &a, const Row &b) { return a.address < b.address; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_address)) // one walker emits in order
    std::sort(rows.begin(), rows.end(), by_address);

  if (args.json) {
    // Streamed: the allocation list can be far larger than anything worth holding as a tree.
    Json head;
    head["schema_version"] = kReportSchemaVersion;
    head["dump"] = dumpSummaryJson(**snapshot);
    Json heaps = Json::array();
    for (const HeapWalkResult &h : results)
      heaps.push_back(heapJson(h));
    head["heaps"] = std::move(heaps);
    Json diag = diagnosticsJson((*snapshot)->diagnostics);
    for (Json &d : diagnosticsJson(diags))
      diag.push_back(std::move(d));
    head["diagnostics"] = std::move(diag);
    std::string text = head.dump(2, ' ', false, Json::error_handler_t::replace);
    text.pop_back(); // reopen the object to append the streamed array
    std::cout << text << ",\n  \"allocations\": [";
    std::cout.flush();
    // Millions of lines: llvm::outs() is buffered and formats without printf or temporaries.
    llvm::raw_ostream &out = llvm::outs();
    auto hex = [&out](uint64_t v) { llvm::write_hex(out, v, llvm::HexPrintStyle::PrefixLower); };
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row &r = rows[i];
      out << (i ? ",\n" : "\n") << "    {\"address\": \"";
      hex(r.address);
      out << "\", \"size\": " << r.size << ", \"chunk\": \"";
      hex(r.chunk);
      out << "\", \"state\": \"" << stateName(r.state)
          << "\", \"mmapped\": " << (r.mmapped ? "true" : "false") << ", \"arena\": \"";
      hex(r.arena);
      out << "\", \"walker\": \"" << results[r.walker].walker << "\"}";
    }
    out.flush();
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
  // The same columns as the header's printf format.
  llvm::raw_ostream &out = llvm::outs();
  auto hexColumn = [&out](uint64_t v) { // "0x..." left-justified in 18 columns
    llvm::write_hex(out, v, llvm::HexPrintStyle::PrefixLower);
    const unsigned digits = v ? (64 - llvm::countLeadingZeros(v) + 3) / 4 : 1;
    out.indent(16 - digits);
  };
  for (const Row &r : rows) {
    hexColumn(r.address);
    out << ' ' << llvm::format_decimal(r.size, 12) << ' '
        << llvm::left_justify(stateName(r.state), 7) << ' '
        << llvm::left_justify(r.mmapped ? "yes" : "no", 7) << ' ';
    hexColumn(r.arena);
    out << ' ' << results[r.walker].walker << '\n';
  }
  out.flush();
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
  cmd->add_option("--exe", args->exe,
                  "The dumped program's executable, for its symbols (docs/cli.md)");
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->callback([&runner, args] { runner = [args] { return runHeap(*args); }; });
}

} // namespace dumpsift::tool
