#include "report_input.h"

#include "dumpsift/report/report.h"
#include "dumpsift/report/saved_report.h"
#include "dumpsift/support/error.h"

#include "llvm/Support/MemoryBuffer.h"

namespace dumpsift::tool {

namespace {

/// The JSON report of the dump at `path` (whose first bytes are `head`), analyzed with `options`.
llvm::Expected<std::string> analyzedReport(const std::string &path, llvm::StringRef head,
                                           const AnalyzeOptions &options) {
  if (head.empty())
    return createError("empty file: neither a report nor a dump");
  if (!head.startswith("\x7f"
                       "ELF") &&
      !head.startswith("MDMP"))
    return createError("neither a report (a JSON object) nor a dump (an ELF core or a minidump)");
  auto snapshot = openDump(path);
  if (!snapshot)
    return snapshot.takeError();
  AddressSpace memory(**snapshot);
  // The figures diff and check compare say nothing of holders: the pass is not run.
  AnalyzeOptions figures_options = options;
  figures_options.holders = HoldersMode::None;
  Analysis analysis = analyze(memory, figures_options);
  std::string report;
  llvm::raw_string_ostream out(report);
  writeReportJson(**snapshot, analysis, /*extracted=*/nullptr, out);
  out.flush();
  return report;
}

} // namespace

llvm::Expected<ReportFigures> loadFigures(const std::string &path, const AnalyzeOptions &options,
                                          bool &was_dump) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createFileError(path, llvm::errorCodeToError(file.getError()));
  llvm::StringRef bytes = (*file)->getBuffer();
  was_dump = !isReportText(bytes);
  llvm::Expected<SavedReport> report = [&]() -> llvm::Expected<SavedReport> {
    if (!was_dump)
      return readReport(bytes);
    std::string head = bytes.take_front(4).str();
    file->reset(); // openDump maps the file itself
    llvm::Expected<std::string> text = analyzedReport(path, head, options);
    if (!text)
      return text.takeError();
    return readReport(*text);
  }();
  if (!report)
    return llvm::createFileError(path, report.takeError());
  return std::move(report->figures);
}

} // namespace dumpsift::tool
