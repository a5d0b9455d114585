// `dumpsift html REPORT.json DUMP -o PAGE`: the HTML page of a saved report, the bytes read from
// the dump again. The report layer reads the report (saved_report.h) and checks the analysis
// against it; this declares the options and runs the steps.
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/html_report.h"
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/atomic_file.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace dumpsift::tool {

namespace {

struct HtmlCommandArgs {
  std::string report;
  std::string dump;
  std::string output;
  size_t html_thumbnails = HtmlOptions().thumbnails;
  std::string exe;
  unsigned threads = 0;
  bool quiet = false;
};

/// Writes the page of the saved report `args.report`: the report layer reads it and checks that it
/// can be of the dump; the dump is analyzed with the options it records, and the page is written
/// only when that analysis gives the saved report again (docs/html-report.md).
llvm::Expected<int> runHtml(const HtmlCommandArgs &args) {
  auto fail = [&](llvm::Error e) { return llvm::createFileError(args.report, std::move(e)); };
  auto file = llvm::MemoryBuffer::getFile(args.report, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createFileError(args.report, llvm::errorCodeToError(file.getError()));
  const llvm::StringRef saved_text = (*file)->getBuffer();
  llvm::Expected<SavedReport> saved = readReport(saved_text);
  if (!saved)
    return fail(saved.takeError());
  if (llvm::Error e = checkReportOfDump(*saved, args.dump))
    return fail(std::move(e));
  llvm::Expected<AnalyzeOptions> options = recordedOptions(*saved);
  if (!options)
    return fail(options.takeError());
  options->threads = args.threads;

  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return llvm::createFileError(args.dump, snapshot.takeError());
  (*snapshot)->executable_file = args.exe;
  AddressSpace memory(**snapshot);
  Progress progress(!args.quiet && stderrIsTerminal(), /*timings=*/false);
  Analysis analysis = analyze(memory, *options, [&](llvm::StringRef phase, uint64_t d, uint64_t t) {
    progress.update(phase, d, t);
  });
  if (llvm::Error e = checkReportReproduced(saved_text, **snapshot, analysis)) {
    progress.finish();
    return fail(std::move(e));
  }

  progress.update("writing the HTML report", 0, 0);
  HtmlOptions html;
  html.thumbnails = args.html_thumbnails;
  if (llvm::Error e = writeFileAtomically(args.output, [&](llvm::raw_ostream &out) {
        writeReportHtml(**snapshot, memory, analysis, /*extracted=*/nullptr, html, out);
        return llvm::Error::success();
      }))
    return llvm::createFileError(args.output, std::move(e));
  progress.finish();
  if (!args.quiet)
    llvm::outs() << "HTML report: " << args.output << "\n";
  return kExitOk;
}

} // namespace

void addHtmlCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<HtmlCommandArgs>();
  CLI::App *cmd = app.add_subcommand(
      "html", "Write the HTML page of a saved JSON report, reading the bytes from its dump again "
              "(the dump is analyzed anew and must give the same report; docs/html-report.md)");
  cmd->add_option("report", args->report, "The JSON report (analyze --report)")->required();
  cmd->add_option("dump", args->dump, "The dump it was made from")->required();
  cmd->add_option("-o,--output", args->output, "Write the HTML report to this file (atomically)")
      ->required();
  cmd->add_option("--html-thumbnails", args->html_thumbnails,
                  "Thumbnails at most, largest groups first")
      ->capture_default_str();
  cmd->add_option("--exe", args->exe,
                  "The dumped program's executable, as given to analyze (docs/cli.md)");
  cmd->add_option("--threads", args->threads,
                  "Threads for walking heaps and sniffing (default: all cores)");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr, no closing line on stdout");
  cmd->callback([&runner, args] { runner = [args] { return runHtml(*args); }; });
}

} // namespace dumpsift::tool
