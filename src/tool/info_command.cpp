// `dumpsift info DUMP`: what the dump holds (docs/cli.md).
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/report/info.h"
#include "tool.h"

#include "llvm/Support/raw_ostream.h"

namespace dumpsift::tool {

namespace {
struct InfoOptions {
  std::string dump;
  bool json = false;
};
} // namespace

void addInfoCommand(CLI::App &app, Runner &runner) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App *cmd = app.add_subcommand("info", "What the dump holds: process, threads, modules, "
                                             "memory regions and captured bytes per class");
  cmd->add_option("dump", options->dump, "ELF core or minidump")->required();
  cmd->add_flag("--json", options->json, "Print JSON instead of text");
  cmd->callback([&runner, options] {
    runner = [options]() -> llvm::Expected<int> {
      auto snapshot = openDump(options->dump);
      if (!snapshot)
        return llvm::createFileError(options->dump, snapshot.takeError());
      if (options->json)
        writeInfoJson(**snapshot, llvm::outs());
      else
        writeInfoText(**snapshot, llvm::outs());
      return kExitOk;
    };
  });
}

} // namespace dumpsift::tool
