// `dumpsift analyze DUMP`: the large buffers of every heap, sniffed and grouped; the summary, the
// JSON report, and with --extract the buffers as files (docs/cli.md, docs/extraction.md).
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/html_report.h"
#include "dumpsift/report/manifest.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/page_link.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"
#include "options.h"
#include "progress.h"
#include "tool.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace dumpsift::tool {

namespace {
/// `--extract DIR` and the options that shape it, as typed.
struct ExtractArgs {
  std::string dir;
  std::string group;
  bool raw = false;
  bool dedupe = false;
  bool force = false;
  std::string max_bytes = "1G";
  std::string max_files;
};

/// Validates the extraction options of `raw` into `options` (sizes accept 64K/1M/1G/0x10000).
llvm::Error resolveExtract(const ExtractArgs &raw, ExtractOptions &options) {
  if (!raw.group.empty()) {
    options.group_size = parseSize(raw.group);
    if (!options.group_size)
      return createError("--group: '" + raw.group +
                         "' is not a size (a group's exact size, e.g. 135152)");
  }
  std::optional<uint64_t> max_bytes = parseSize(raw.max_bytes);
  if (!max_bytes)
    return createError("--max-bytes: '" + raw.max_bytes + "' is not a size (e.g. 1G, 500M)");
  options.max_bytes = *max_bytes;
  if (!raw.max_files.empty()) {
    std::optional<uint64_t> max_files = parseSize(raw.max_files);
    if (!max_files)
      return createError("--max-files: '" + raw.max_files + "' is not a number");
    options.max_files = *max_files;
  }
  options.raw = raw.raw;
  options.dedupe = raw.dedupe;
  options.force = raw.force;
  return llvm::Error::success();
}

struct AnalyzeCommandArgs {
  std::string dump;
  AnalyzeArgs analysis;
  size_t top = 10;
  bool json = false;
  std::string report;
  std::string html;
  size_t html_thumbnails = HtmlOptions().thumbnails;
  bool quiet = false;
  bool timings = false;
  std::string exe;
  std::vector<std::string> labels;
  ExtractArgs extract;
};

/// The --label arguments as the report's labels; an error names a malformed or repeated one.
llvm::Expected<ReportLabels> resolveLabels(const std::vector<std::string> &arguments) {
  ReportLabels labels;
  for (const std::string &argument : arguments) {
    auto label = parseLabelArgument(argument);
    if (!label)
      return createError("--label: " + llvm::toString(label.takeError()));
    if (!labels.insert(std::move(*label)).second)
      return createError("--label: '" + argument.substr(0, argument.find('=')) +
                         "' is given twice");
  }
  return labels;
}

llvm::Expected<int> runAnalyze(const AnalyzeCommandArgs &args) {
  llvm::Expected<AnalyzeOptions> options = resolveAnalyzeOptions(args.analysis);
  if (!options)
    return options.takeError();
  ExtractOptions extract_options;
  if (llvm::Error e = resolveExtract(args.extract, extract_options))
    return e;
  llvm::Expected<ReportLabels> labels = resolveLabels(args.labels);
  if (!labels)
    return labels.takeError();

  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return llvm::createFileError(args.dump, snapshot.takeError());
  (*snapshot)->executable_file = args.exe;
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal(), args.timings);
  Analysis analysis = analyze(memory, *options, [&](llvm::StringRef phase, uint64_t d, uint64_t t) {
    progress.update(phase, d, t);
  });

  std::optional<Extraction> extraction;
  if (!args.extract.dir.empty()) {
    extraction.emplace();
    if (llvm::Error e = extractBuffers(
            memory, analysis.buffers, args.extract.dir, extract_options, writeManifest, *extraction,
            [&](llvm::StringRef phase, uint64_t d, uint64_t t) { progress.update(phase, d, t); }))
      return e;
  }

  if (!args.report.empty() || args.json) {
    progress.update("writing the report", 0, 0);
    const Extraction *extracted = extraction ? &*extraction : nullptr;
    if (!args.report.empty())
      if (llvm::Error e = writeFileAtomically(args.report, [&](llvm::raw_ostream &out) {
            writeReportJson(**snapshot, analysis, extracted, out, *labels);
            return llvm::Error::success();
          }))
        return llvm::createFileError(args.report, std::move(e));
    progress.finish();
    if (!args.report.empty() && !args.quiet)
      llvm::errs() << "dumpsift: wrote the report to " << args.report << "\n";
    if (args.json) {
      writeReportJson(**snapshot, analysis, extracted, llvm::outs(), *labels);
      llvm::outs().flush();
    }
  }
  if (!args.html.empty()) {
    progress.update("writing the HTML report", 0, 0);
    HtmlOptions html;
    html.thumbnails = args.html_thumbnails;
    if (extraction)
      html.extract_href = linkFromPage(args.html, extraction->dir);
    if (llvm::Error e = writeFileAtomically(args.html, [&](llvm::raw_ostream &out) {
          writeReportHtml(**snapshot, memory, analysis, extraction ? &*extraction : nullptr, html,
                          out);
          return llvm::Error::success();
        }))
      return llvm::createFileError(args.html, std::move(e));
  }
  progress.finish();
  // The summary, and the lines that say where files went, unless --json printed the report or
  // --quiet asked for nothing but the files.
  if (args.json || args.quiet)
    return kExitOk;
  writeSummaryText(**snapshot, analysis, TextOptions{args.top == 0 ? SIZE_MAX : args.top},
                   llvm::outs());
  if (extraction) {
    llvm::SmallString<256> manifest(extraction->dir);
    llvm::sys::path::append(manifest, kManifestName);
    llvm::outs() << "\nExtracted " << extraction->files.size()
                 << (extraction->files.size() == 1 ? " file (" : " files (")
                 << humanBytes(extraction->bytes_written) << ") into " << printable(extraction->dir)
                 << ", listed in " << printable(manifest.str());
    if (extraction->duplicates)
      llvm::outs() << " (" << extraction->duplicates << " duplicates written once)";
    llvm::outs() << "\n";
  }
  if (!args.html.empty())
    llvm::outs() << "\nHTML report: " << args.html << "\n";
  return kExitOk;
}
} // namespace

void addAnalyzeCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<AnalyzeCommandArgs>();
  CLI::App *cmd = app.add_subcommand(
      "analyze", "Find the large buffers in every heap, sniff what they hold, group them by size");
  cmd->add_option("dump", args->dump, "ELF core or minidump")->required();
  addAnalyzeOptions(*cmd, args->analysis, "Analysis");
  cmd->add_option("--exe", args->exe,
                  "The dumped program's executable, for its symbols (docs/cli.md)");
  cmd->add_option("--label", args->labels,
                  "KEY=VALUE: a label of the dump the report records (service=api, "
                  "version=1.2; repeatable; docs/fleet.md)")
      ->allow_extra_args(false);
  cmd->add_option("--top", args->top, "Rows in the group table, and findings shown (0: all)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the JSON report on stdout instead of the summary");
  cmd->add_option("--report", args->report, "Write the JSON report to this file (atomically)");
  CLI::Option *html = cmd->add_option(
      "--html", args->html, "Write the HTML report to this file (atomically; docs/html-report.md)");
  cmd->add_option("--html-thumbnails", args->html_thumbnails,
                  "With --html: thumbnails at most, largest groups first")
      ->capture_default_str()
      ->needs(html);
  cmd->add_flag("-q,--quiet", args->quiet,
                "Print nothing but errors (and --json's report); files are still written");
  cmd->add_flag("--timings", args->timings,
                "Print how long each phase took on stderr (docs/performance.md)");
  CLI::Option *extract = cmd->add_option(
      "--extract", args->extract.dir,
      "Write every buffer that passes the filters into this directory (docs/extraction.md)");
  cmd->add_option("--group", args->extract.group,
                  "With --extract: only buffers of this exact size (a group's size)")
      ->needs(extract);
  cmd->add_flag("--raw", args->extract.raw,
                "With --extract: write whole allocations, not the content from its offset")
      ->needs(extract);
  cmd->add_flag("--dedupe", args->extract.dedupe,
                "With --extract: write identical bytes once (the manifest lists every address)")
      ->needs(extract);
  cmd->add_flag("--force", args->extract.force,
                "With --extract: write into a directory that is not empty")
      ->needs(extract);
  cmd->add_option("--max-bytes", args->extract.max_bytes,
                  "With --extract: stop before the files would hold more than this")
      ->capture_default_str()
      ->needs(extract);
  cmd->add_option("--max-files", args->extract.max_files,
                  "With --extract: stop before writing more files than this")
      ->needs(extract);
  cmd->callback([&runner, args] { runner = [args] { return runAnalyze(*args); }; });
}

} // namespace dumpsift::tool
