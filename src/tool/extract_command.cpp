// `dumpsift extract DUMP --address ADDR [--out FILE]`: writes the one buffer that holds an address
// (or its decoded payload) as a file.
#include "dumpsift/extract/extract.h"
#include "dumpsift/report/manifest.h"
#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/terminal_text.h"
#include "tool.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <initializer_list>
#include <vector>

namespace dumpsift::tool {

namespace {
struct ExtractCmdArgs {
  std::string dump;
  std::string address;
  std::string out;
  bool raw = false;
  bool payload = false;
  unsigned body = 0; // 0: not given
  bool force = false;
  bool json = false;
};

/// The kinds whose content carries payloads of one of `carried`, in the registry's order:
/// "amqp", "aws-chunked and amqp", "a, b and c".
std::string kindsCarrying(std::initializer_list<KindPayloads> carried) {
  std::vector<llvm::StringRef> names;
  for (ContentKind kind : allKinds())
    if (llvm::is_contained(carried, kindFacts(kind).payloads))
      names.push_back(kindName(kind));
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i].str();
  return list;
}

/// The item of `items` the arguments ask for: the buffer, its aws-chunked payload, or an AMQP
/// message body; an error that says what the buffer offers otherwise.
llvm::Expected<const ExtractItem *> chooseItem(const std::vector<ExtractItem> &items,
                                               const Buffer &buffer, const ExtractCmdArgs &args) {
  const std::string where = hexAddress(buffer.allocation.address);
  if (!args.payload && args.body == 0) {
    if (items.empty() || items.front().file.role != ExtractRole::Buffer)
      return createError("the buffer at " + where + " has none of its bytes in the dump");
    return &items.front();
  }
  unsigned bodies = 0;
  for (const ExtractItem &item : items) {
    if (item.file.role == ExtractRole::Payload && args.body == 0)
      return &item;
    if (item.file.role == ExtractRole::Body && ++bodies == std::max(args.body, 1u))
      return &item;
  }
  const std::string kind_name = kindName(buffer.content.kind).str();
  const KindPayloads payloads = kindFacts(buffer.content.kind).payloads;
  if (args.body != 0) {
    const std::string option = "--body " + std::to_string(args.body) + ": ";
    if (bodies)
      return createError(option + "the " + kind_name + " buffer at " + where + " holds " +
                         std::to_string(bodies) + " message bod" + (bodies == 1 ? "y" : "ies"));
    if (payloads == KindPayloads::Messages)
      return createError(option + "the " + kind_name + " buffer at " + where +
                         " holds no message body in the dump");
    return createError(
        option + "the buffer at " + where + " holds " + kind_name + "; only " +
        kindsCarrying({KindPayloads::Messages}) + " buffers have message bodies" +
        (payloads == KindPayloads::One ? " (--payload decodes " + kind_name + ")" : ""));
  }
  if (payloads != KindPayloads::None)
    return createError("--payload: the " + kind_name + " buffer at " + where +
                       " has none of its payload in the dump");
  return createError("--payload: the buffer at " + where + " holds " + kind_name +
                     ", which has no payload to decode (" +
                     kindsCarrying({KindPayloads::One, KindPayloads::Messages}) + " do)");
}

llvm::Expected<int> runExtract(const ExtractCmdArgs &args) {
  std::optional<uint64_t> address = parseHexAddress(args.address);
  if (!address)
    return createError("--address: '" + args.address + "' is not an address (e.g. 0x7f12a4c01010)");

  auto snapshot = openDump(args.dump);
  if (!snapshot)
    return llvm::createFileError(args.dump, snapshot.takeError());
  AddressSpace memory(**snapshot);
  Diagnostics diags;
  llvm::Expected<Buffer> buffer = locateBuffer(memory, *address, diags);
  if (!buffer)
    return llvm::createFileError(args.dump, buffer.takeError());

  const bool decode = args.payload || args.body != 0;
  std::vector<ExtractItem> items = extractItems(memory, *buffer, args.raw, decode);
  llvm::Expected<const ExtractItem *> item = chooseItem(items, *buffer, args);
  if (!item)
    return item.takeError();

  const std::string path = args.out.empty() ? (*item)->file.name : args.out;
  if (!args.force && llvm::sys::fs::exists(path))
    return llvm::createFileError(path,
                                 createError("the file already exists (--force replaces it)"));
  llvm::Expected<ExtractedFile> file = writeItem(**item, path, /*overwrite=*/true);
  if (!file)
    return file.takeError();

  if (args.json) {
    writeManifestLine(*file, path, llvm::outs());
    llvm::outs().flush();
  } else {
    llvm::outs() << "wrote " << printable(path) << ": " << file->size << " bytes of "
                 << kindName(file->kind).str() << (file->truncated ? " (truncated)" : "")
                 << " from " << roleName(file->role).str() << " " << hexAddress(file->address)
                 << "+" << file->offset << " (" << stateName(file->state).str() << "), sha256 "
                 << (file->sha256.empty() ? "not computed" : file->sha256) << "\n";
  }
  return kExitOk;
}
} // namespace

void addExtractCommand(CLI::App &app, Runner &runner) {
  auto args = std::make_shared<ExtractCmdArgs>();
  CLI::App *cmd = app.add_subcommand(
      "extract", "Write the buffer that holds an address (or its decoded payload) as a file");
  cmd->add_option("dump", args->dump, "ELF core or minidump")->required();
  cmd->add_option("--address", args->address,
                  "Any address inside the allocation (hex, e.g. 0x7f12a4c01010)")
      ->required();
  cmd->add_option("--out", args->out,
                  "File to write (default: <address>-<size>.<ext> in the current directory)");
  cmd->add_flag("--raw", args->raw, "Write the whole allocation, not the content from its offset");
  cmd->add_flag("--payload", args->payload,
                "Write the decoded payload: aws-chunked chunk data joined, or the first AMQP body");
  cmd->add_option("--body", args->body, "Write the body of this AMQP message (1 is the first)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--force", args->force, "Replace the output file if it exists");
  cmd->add_flag("--json", args->json,
                "Print the file's manifest line (JSON) instead of a sentence");
  cmd->callback([&runner, args] { runner = [args] { return runExtract(*args); }; });
}

} // namespace dumpsift::tool
