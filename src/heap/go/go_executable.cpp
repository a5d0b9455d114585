// Symbols from the dumped program's executable, when its file is on this machine and is the build
// that ran: the dump layer's module files (dumpsift/dump/module_file.h) open it and compare its
// build ID notes (GNU and Go) with the dump's copy of them.
#include "dumpsift/dump/module_file.h"
#include "go_heap.h"

#include <utility>

namespace dumpsift::golang {

std::unique_ptr<ModuleFile> openExecutable(const AddressSpace &memory, std::string &source,
                                           std::string &why, Diagnostics *diags) {
  const Snapshot &snap = memory.snapshot();
  const Module *exe = snap.executableModule();
  const bool named = !snap.executable_file.empty();
  std::string path = named ? snap.executable_file : exe ? exe->path : "";
  OpenedModuleFile opened = openModuleFile(memory, exe ? *exe : Module{}, path, named);
  auto warn = [&](const std::string &text) {
    if (diags)
      diags->warn("go", text);
  };
  switch (opened.problem) {
  case ModuleFileProblem::None:
    source = opened.file->buildIdChecked() ? path : path + ", build ID not in the dump";
    return std::move(opened.file);
  case ModuleFileProblem::Missing:
    why = path.empty() ? "no executable named" : "executable " + path + " not on this machine";
    if (named)
      warn("--exe " + path + ": no such file");
    return nullptr;
  case ModuleFileProblem::Unreadable:
    why = "executable " + path + " unreadable: " + opened.detail;
    if (named)
      warn("--exe " + path + ": " + why);
    return nullptr;
  case ModuleFileProblem::NotElf:
    why = "executable " + path + " is not a 64-bit little-endian ELF file";
    if (named)
      warn("--exe " + path + ": " + why);
    return nullptr;
  case ModuleFileProblem::OtherBuild:
    why = "executable " + path + " is another build than the dumped one";
    warn(path + ": its build ID differs from the dumped program's; symbols not used");
    return nullptr;
  case ModuleFileProblem::NoBuildId: // a file that merely has the same name proves nothing
    why = "executable " + path + ": its build ID is not in the dump";
    return nullptr;
  }
  return nullptr;
}

std::optional<uint64_t> executableSymbol(const AddressSpace &memory, llvm::StringRef symbol,
                                         std::string &source, std::string &why,
                                         Diagnostics &diags) {
  const std::unique_ptr<ModuleFile> file = openExecutable(memory, source, why, &diags);
  if (!file)
    return std::nullopt;
  std::optional<uint64_t> found = file->symbolAddress(symbol);
  if (!found)
    why = "executable " + file->path() + " has no symbol " + symbol.str() + " (stripped)";
  return found;
}

} // namespace dumpsift::golang
