// dumpsift: find, group, sniff and extract the large buffers in a process memory dump.
#include "dumpsift/support/terminal_text.h"
#include "dumpsift/support/version.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace dumpsift::tool {

bool stderrIsTerminal() {
  return isatty(STDERR_FILENO) != 0;
}

} // namespace dumpsift::tool

int main(int argc, char **argv) {
  using namespace dumpsift::tool;
  CLI::App app{"dumpsift: find, group, sniff and extract the large buffers in a process memory "
               "dump (ELF core or minidump)."};
  app.name("dumpsift");
  app.set_version_flag("--version", std::string("dumpsift ") + dumpsift::toolVersion().str());
  app.require_subcommand(1);

  Runner runner;
  addInfoCommand(app, runner);
  addHeapCommand(app, runner);
  addAnalyzeCommand(app, runner);
  addExtractCommand(app, runner);
  addDiffCommand(app, runner);
  addCheckCommand(app, runner);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitError;
  }

  llvm::Expected<int> result = runner();
  if (!result) {
    llvm::errs() << "dumpsift: error: " << dumpsift::printable(llvm::toString(result.takeError()))
                 << "\n";
    return kExitError;
  }
  return *result;
}
