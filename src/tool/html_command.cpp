// `dumpsift html REPORT.json DUMP -o PAGE`: the HTML page of a saved report, the bytes read from
// the dump again. The dump is analyzed anew with the options the report records, and the page is
// written only when that analysis gives the saved report again (docs/html-report.md).
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/report/html_report.h"
#include "dumpsift/report/report.h"
#include "dumpsift/support/atomic_file.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/version.h"
#include "progress.h"
#include "tool.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace dumpsift::tool {

namespace {

using Json = nlohmann::json;

struct HtmlCommandArgs {
  std::string report;
  std::string dump;
  std::string output;
  size_t html_thumbnails = HtmlOptions().thumbnails;
  std::string exe;
  unsigned threads = 0;
  bool quiet = false;
};

/// The analysis options the report's `options` object records (as optionsJson writes them).
llvm::Expected<AnalyzeOptions> recordedOptions(const Json &report) {
  auto bad = [](const std::string &field, const std::string &what) {
    return createError("its options." + field + " is not " + what);
  };
  const Json *o = report.contains("options") ? &report["options"] : nullptr;
  if (!o || !o->is_object())
    return createError("it records no options object");
  AnalyzeOptions options;
  if (!o->contains("min_size") || !(*o)["min_size"].is_number_unsigned())
    return bad("min_size", "a size");
  options.min_size = (*o)["min_size"].get<uint64_t>();
  const Json max = o->value("max_size", Json());
  if (!max.is_null()) {
    if (!max.is_number_unsigned())
      return bad("max_size", "a size or null");
    options.max_size = max.get<uint64_t>();
  }
  const Json kinds = o->value("kinds", Json::array());
  if (!kinds.is_array())
    return bad("kinds", "a list of kinds");
  for (const Json &k : kinds) {
    std::optional<ContentKind> kind =
        k.is_string() ? parseKind(k.get<std::string>()) : std::nullopt;
    if (!kind)
      return bad("kinds", "a list of known kinds");
    options.kinds.push_back(*kind);
  }
  const Json state = o->value("state", Json());
  if (!state.is_null()) {
    std::string name = state.is_string() ? state.get<std::string>() : "";
    if (name == "used")
      options.state = AllocState::Used;
    else if (name == "free")
      options.state = AllocState::Free;
    else if (name == "unknown")
      options.state = AllocState::Unknown;
    else
      return bad("state", "used, free, unknown or null");
  }
  const Json walkers = o->value("walkers", Json::array());
  if (!walkers.is_array())
    return bad("walkers", "a list of walker names");
  for (const Json &w : walkers) {
    if (!w.is_string())
      return bad("walkers", "a list of walker names");
    options.walkers.push_back(w.get<std::string>());
  }
  const Json region_scan = o->value("region_scan", Json(true));
  if (!region_scan.is_boolean())
    return bad("region_scan", "true or false");
  options.region_scan = region_scan.get<bool>();
  const Json group_by = o->value("group_by", Json("size"));
  if (group_by == "size,kind")
    options.group_by = GroupBy::SizeKind;
  else if (group_by != "size")
    return bad("group_by", "'size' or 'size,kind'");
  return options;
}

/// Whether the saved report can be of the dump at `dump_path` at all, before the analysis: the
/// tool and schema that wrote it, the dump's size in bytes and its file name.
llvm::Error checkIdentity(const Json &report, const std::string &dump_path) {
  if (report.value("schema_version", Json()) != Json(kReportSchemaVersion))
    return createError("its schema_version is not " + std::to_string(kReportSchemaVersion));
  const Json version = report.contains("tool") && report["tool"].is_object()
                           ? report["tool"].value("version", Json())
                           : Json();
  if (version != Json(toolVersion().str()))
    return createError(
        "it was made by dumpsift " +
        (version.is_string() ? version.get<std::string>() : std::string("(unknown)")) +
        ", this is dumpsift " + toolVersion().str());
  if (report.contains("extracted"))
    return createError("it records an extraction (--extract), whose links `html` does not make; "
                       "run `dumpsift analyze DUMP --extract DIR --html PAGE`");
  const Json dump = report.value("dump", Json());
  if (!dump.is_object() || !dump.value("file_size", Json()).is_number_unsigned() ||
      !dump.value("path", Json()).is_string())
    return createError("it records no dump.file_size and dump.path");
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(dump_path, size))
    return llvm::createFileError(dump_path, llvm::errorCodeToError(ec));
  const std::string saved_path = dump["path"].get<std::string>();
  if (dump["file_size"].get<uint64_t>() != size)
    return createError("it was not made from '" + dump_path + "': its dump '" + saved_path +
                       "' has " + std::to_string(dump["file_size"].get<uint64_t>()) +
                       " bytes, this one " + std::to_string(size));
  if (llvm::sys::path::filename(saved_path) != llvm::sys::path::filename(dump_path))
    return createError("it was not made from '" + dump_path + "': its dump is named '" +
                       llvm::sys::path::filename(saved_path).str() + "'");
  return llvm::Error::success();
}

/// The first top-level field where `fresh` and `saved` differ ("" when none).
std::string firstDifference(const Json &fresh, const Json &saved) {
  for (const auto &[key, value] : saved.items())
    if (!fresh.contains(key) || fresh[key] != value) {
      if (key == "dump" && value.is_object() && fresh.contains(key))
        for (const auto &[field, v] : value.items())
          if (!fresh[key].contains(field) || fresh[key][field] != v)
            return "dump." + field;
      return key;
    }
  for (const auto &[key, value] : fresh.items())
    if (!saved.contains(key))
      return key;
  return "";
}

llvm::Expected<int> runHtml(const HtmlCommandArgs &args) {
  auto fail = [&](llvm::Error e) { return llvm::createFileError(args.report, std::move(e)); };
  auto file = llvm::MemoryBuffer::getFile(args.report, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createFileError(args.report, llvm::errorCodeToError(file.getError()));
  Json saved = Json::parse((*file)->getBuffer().begin(), (*file)->getBuffer().end(), nullptr,
                           /*allow_exceptions=*/false);
  file->reset();
  if (saved.is_discarded() || !saved.is_object())
    return fail(createError("not a JSON report (a JSON object)"));
  if (llvm::Error e = checkIdentity(saved, args.dump))
    return fail(std::move(e));
  llvm::Expected<AnalyzeOptions> options = recordedOptions(saved);
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

  // The fresh report must be the saved one, but for the dump's path as given on each command line.
  std::string fresh_text;
  llvm::raw_string_ostream fresh_out(fresh_text);
  writeReportJson(**snapshot, analysis, /*extracted=*/nullptr, fresh_out);
  fresh_out.flush();
  Json fresh = Json::parse(fresh_text);
  fresh_text.clear();
  fresh["dump"]["path"] = saved["dump"]["path"];
  if (fresh != saved) {
    progress.finish();
    return fail(createError("it was not made from '" + args.dump +
                            "' by this version of dumpsift with the options it records: "
                            "the analysis gives another '" +
                            firstDifference(fresh, saved) + "'"));
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
