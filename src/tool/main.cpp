// dumpsift: find, group, sniff and extract the large buffers in a process memory dump.
#include "dumpsift/support/terminal_text.h"
#include "dumpsift/support/version.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
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
  addHtmlCommand(app, runner);
  addFleetCommand(app, runner);

  // CLI11 takes an unknown command for a stray argument ("A subcommand is required"): name it.
  const CLI::App &defined = app;
  const std::vector<const CLI::App *> commands = defined.get_subcommands({});
  auto named = [&](const CLI::App *sub) { return sub->check_name(argv[1]); };
  if (argc > 1 && argv[1][0] != '-' && std::none_of(commands.begin(), commands.end(), named)) {
    std::string known;
    for (const CLI::App *sub : commands)
      known += (known.empty() ? "" : ", ") + sub->get_name();
    llvm::errs() << "dumpsift: error: 'dumpsift': unknown command '" << argv[1]
                 << "' (known: " << known << ") (see 'dumpsift --help')\n";
    return kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e) == 0 ? kExitOk : kExitError;
    // A usage error, in the one error format: the command it is about, and what is wrong.
    std::string command = "dumpsift";
    for (const CLI::App *sub = &app; !sub->get_subcommands().empty();
         sub = sub->get_subcommands().front())
      command += " " + sub->get_subcommands().front()->get_name();
    llvm::errs() << "dumpsift: error: '" << command << "': " << e.what() << " (see '" << command
                 << " --help')\n";
    return kExitError;
  }

  llvm::Expected<int> result = runner();
  if (!result) {
    llvm::errs() << "dumpsift: error: " << dumpsift::printable(llvm::toString(result.takeError()))
                 << "\n";
    return kExitError;
  }
  return *result;
}
