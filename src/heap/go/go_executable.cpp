// Symbols from the dumped program's executable, when its file is on this machine and is the build
// that ran: the dump layer's module files (dumpsift/dump/module_file.h) open it and compare its
// build ID notes (GNU and Go) with the dump's copy of them.
#include "dumpsift/dump/module_file.h"
#include "go_heap.h"

#include <utility>

namespace dumpsift::golang {

std::vector<std::optional<uint64_t>> executableSymbols(const AddressSpace &memory,
                                                       llvm::ArrayRef<llvm::StringRef> symbols,
                                                       std::string &source, std::string &why,
                                                       Diagnostics &diags) {
  std::vector<std::optional<uint64_t>> found(symbols.size());
  const Snapshot &snap = memory.snapshot();
  const Module *exe = snap.executableModule();
  const bool named = !snap.executable_file.empty();
  std::string path = named ? snap.executable_file : exe ? exe->path : "";
  const OpenedModuleFile opened = openModuleFile(memory, exe ? *exe : Module{}, path, named);
  switch (opened.problem) {
  case ModuleFileProblem::None:
    break;
  case ModuleFileProblem::Missing:
    why = path.empty() ? "no executable named" : "executable " + path + " not on this machine";
    if (named)
      diags.warn("go", "--exe " + path + ": no such file");
    return found;
  case ModuleFileProblem::Unreadable:
    why = "executable " + path + " unreadable: " + opened.detail;
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return found;
  case ModuleFileProblem::NotElf:
    why = "executable " + path + " is not a 64-bit little-endian ELF file";
    if (named)
      diags.warn("go", "--exe " + path + ": " + why);
    return found;
  case ModuleFileProblem::OtherBuild:
    why = "executable " + path + " is another build than the dumped one";
    diags.warn("go", path + ": its build ID differs from the dumped program's; symbols not used");
    return found;
  case ModuleFileProblem::NoBuildId: // a file that merely has the same name proves nothing
    why = "executable " + path + ": its build ID is not in the dump";
    return found;
  }
  source = opened.file->buildIdChecked() ? path : path + ", build ID not in the dump";
  bool said = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    found[i] = opened.file->symbolAddress(symbols[i]);
    if (!found[i] && !std::exchange(said, true))
      why = "executable " + path + " has no symbol " + symbols[i].str() + " (stripped)";
  }
  return found;
}

std::optional<uint64_t> executableSymbol(const AddressSpace &memory, llvm::StringRef symbol,
                                         std::string &source, std::string &why,
                                         Diagnostics &diags) {
  return executableSymbols(memory, {symbol}, source, why, diags).front();
}

} // namespace dumpsift::golang
