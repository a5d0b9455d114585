// The DWARF type model (dumpsift/dump/debug_types.h) of a real executable: fixtures/go/go_holders,
// built by Debian's Go with its (compressed) DWARF. Its globals and the types they reach must read
// as the program declares them: main.streams a []*main.ChunkedUploadWrapperStream whose struct has
// position at 0, inputBuffer at 8 and outputBuffer at 32 (int64, then two 24-byte slices), found
// again by its runtime type descriptor; main.requestBody an interface. Its stripped build has no
// DWARF: an empty model, no error.
#include "dumpsift/dump/debug_types.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <sys/stat.h>
#include <vector>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The model of the fixture program `name`, opened as a file the user named (no dump to compare
/// its build ID with); false when it was not built here.
bool readModel(const std::string &name, DebugTypes &out) {
  const std::string program = fixtureProgram("go/" + name);
  if (!availableOrSkipped(std::filesystem::exists(program),
                          program + " was not built (no Go toolchain when CMake ran: run "
                                    "scripts/setup.sh --tests)"))
    return false;
  Snapshot empty;
  AddressSpace memory(empty);
  OpenedModuleFile opened = openModuleFile(memory, Module{}, program, /*named=*/true);
  REQUIRE(opened.problem == ModuleFileProblem::None);
  llvm::Expected<DebugTypes> model = DebugTypes::read(*opened.file);
  if (!model)
    FAIL(llvm::toString(model.takeError()));
  out = std::move(*model);
  return true;
}

const DebugVariable *variableNamed(const DebugTypes &model, llvm::StringRef name) {
  for (const DebugVariable &v : model.variables)
    if (v.name == name)
      return &v;
  return nullptr;
}

} // namespace

TEST_CASE("debug types: a Go program's globals and the slices, pointers and structs they reach") {
  DebugTypes model;
  if (!readModel("go_holders", model))
    return;
  CHECK(std::is_sorted(model.variables.begin(), model.variables.end(),
                       [](const auto &a, const auto &b) { return a.address < b.address; }));
  const DebugVariable *streams = variableNamed(model, "main.streams");
  REQUIRE(streams != nullptr);
  CHECK(streams->address != 0);
  REQUIRE(streams->type < model.types.size());
  const DebugType &slice = model.types[streams->type];
  CHECK(slice.kind == DebugType::Kind::Slice);
  CHECK(slice.name == "[]*main.ChunkedUploadWrapperStream");
  CHECK(slice.size == 24);
  CHECK(slice.has_pointers);
  REQUIRE(slice.target < model.types.size());
  const DebugType &pointer = model.types[slice.target];
  CHECK(pointer.kind == DebugType::Kind::Pointer);
  CHECK(pointer.size == 8);
  REQUIRE(pointer.target < model.types.size());
  const DebugType &stream = model.types[pointer.target];
  CHECK(stream.kind == DebugType::Kind::Struct);
  CHECK(stream.name == "main.ChunkedUploadWrapperStream");
  CHECK(stream.size == 56);
  CHECK(stream.has_pointers);
  REQUIRE(stream.members.size() == 3);
  const std::pair<const char *, uint64_t> expected[] = {
      {"position", 0}, {"inputBuffer", 8}, {"outputBuffer", 32}};
  for (size_t i = 0; i < 3; ++i) {
    INFO(i);
    CHECK(stream.members[i].name == expected[i].first);
    CHECK(stream.members[i].offset == expected[i].second);
  }
  // inputBuffer: a []uint8, whose elements hold no pointer; position: an int64.
  const DebugType &bytes = model.types[stream.members[1].type];
  CHECK(bytes.kind == DebugType::Kind::Slice);
  CHECK(bytes.name == "[]uint8");
  CHECK(bytes.has_pointers); // its data pointer
  REQUIRE(bytes.target < model.types.size());
  CHECK_FALSE(model.types[bytes.target].has_pointers);
  CHECK(model.types[stream.members[0].type].kind == DebugType::Kind::Other);
  CHECK(model.types[stream.members[0].type].size == 8);

  // Its runtime type descriptor's offset, by which an interface value's dynamic type is found.
  CHECK(stream.runtime_type != 0);
  CHECK(std::is_sorted(model.runtime_types.begin(), model.runtime_types.end()));
  auto known = std::lower_bound(model.runtime_types.begin(), model.runtime_types.end(),
                                std::make_pair(stream.runtime_type, uint32_t(0)));
  REQUIRE(known != model.runtime_types.end());
  CHECK(known->first == stream.runtime_type);
  CHECK(model.types[known->second].name == "main.ChunkedUploadWrapperStream");

  // main.requestBody: an io.Reader, an interface value (runtime.iface).
  const DebugVariable *body = variableNamed(model, "main.requestBody");
  REQUIRE(body != nullptr);
  CHECK(model.types[body->type].kind == DebugType::Kind::Interface);
  CHECK(model.types[body->type].has_pointers);

  // main.download: a *bytes.Buffer, whose first field is buf.
  const DebugVariable *download = variableNamed(model, "main.download");
  REQUIRE(download != nullptr);
  const DebugType &to_buffer = model.types[download->type];
  REQUIRE(to_buffer.kind == DebugType::Kind::Pointer);
  const DebugType &buffer = model.types[to_buffer.target];
  CHECK(buffer.name == "bytes.Buffer");
  REQUIRE_FALSE(buffer.members.empty());
  CHECK(buffer.members.front().name == "buf");
  CHECK(buffer.members.front().offset == 0);
}

TEST_CASE("debug types: a stripped program has none") {
  DebugTypes model;
  if (!readModel("go_holders_stripped", model))
    return;
  CHECK(model.variables.empty());
  CHECK(model.types.empty());
}

namespace {

/// The file offset, size and flags of section `name` of the ELF64 little-endian file `bytes`
/// (its section headers read here, apart from the dump layer's reader); nullopt when absent.
struct SectionPlace {
  uint64_t offset = 0, size = 0, flags = 0;
};
std::optional<SectionPlace> sectionOf(const std::vector<uint8_t> &bytes, const std::string &name) {
  auto u16 = [&](uint64_t at) { return uint64_t(bytes.at(at)) | uint64_t(bytes.at(at + 1)) << 8; };
  auto u32 = [&](uint64_t at) { return u16(at) | u16(at + 2) << 16; };
  auto u64 = [&](uint64_t at) { return u32(at) | u32(at + 4) << 32; };
  const uint64_t headers = u64(0x28), entry = u16(0x3A), count = u16(0x3C), names = u16(0x3E);
  const uint64_t strings = u64(headers + names * entry + 24);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = headers + i * entry;
    std::string found;
    for (uint64_t at = strings + u32(h); bytes.at(at) != 0; ++at)
      found += char(bytes[at]);
    if (found == name)
      return SectionPlace{u64(h + 24), u64(h + 32), u64(h + 8)};
  }
  return std::nullopt;
}

/// DebugTypes::read of `bytes` written to a file of the scratch directory `dir`.
llvm::Expected<DebugTypes> readWritten(const std::string &dir, const std::string &name,
                                       const std::vector<uint8_t> &bytes) {
  const std::string path = dir + "/" + name;
  writeFileBytes(path, bytes);
  Snapshot empty;
  AddressSpace memory(empty);
  OpenedModuleFile opened = openModuleFile(memory, Module{}, path, /*named=*/true);
  REQUIRE(opened.problem == ModuleFileProblem::None);
  return DebugTypes::read(*opened.file);
}

} // namespace

TEST_CASE("debug types: a compressed section claiming more than zlib can give is refused, and "
          "damaged compressed bytes are read without harm") {
  const std::string program = fixtureProgram("go/go_holders");
  if (!availableOrSkipped(std::filesystem::exists(program),
                          program + " was not built (no Go toolchain when CMake ran: run "
                                    "scripts/setup.sh --tests)"))
    return;
  const std::vector<uint8_t> bytes = readFileBytes(program);
  const std::optional<SectionPlace> info = sectionOf(bytes, ".debug_info");
  REQUIRE(info);
  REQUIRE((info->flags & 0x800) != 0); // SHF_COMPRESSED: Go compresses its DWARF
  REQUIRE(info->size > 24);
  const std::string dir = scratchDir("debug_types_hostile");

  // Its Elf64_Chdr claims 2^40 bytes: refused before anything is allocated for them.
  std::vector<uint8_t> huge = bytes;
  for (unsigned i = 0; i < 8; ++i)
    huge[info->offset + 8 + i] = uint8_t((uint64_t(1) << 40) >> (8 * i));
  llvm::Expected<DebugTypes> refused = readWritten(dir, "huge", huge);
  REQUIRE_FALSE(static_cast<bool>(refused));
  const std::string why = llvm::toString(refused.takeError());
  CHECK_THAT(why, Catch::Contains("debug section .debug_info claims 1099511627776 bytes"));

  // Its compressed bytes scrambled: whatever the reader makes of them, it returns.
  std::vector<uint8_t> scrambled = bytes;
  uint32_t state = 12345;
  for (uint64_t at = info->offset + 24; at < info->offset + info->size; ++at) {
    state = state * 1103515245u + 12345u;
    scrambled[at] = uint8_t(state >> 16);
  }
  llvm::Expected<DebugTypes> damaged = readWritten(dir, "scrambled", scrambled);
  if (damaged)
    CHECK(damaged->variables.empty()); // no .debug_info to read them from
  else
    llvm::consumeError(damaged.takeError());
  std::filesystem::remove_all(dir);
}

TEST_CASE("module files: a path a dump names that is no regular file (a device, a FIFO, a "
          "directory) is refused at once, not read") {
  Snapshot empty;
  AddressSpace memory(empty);
  // /dev/zero would give bytes for ever; a FIFO nobody writes would block the read.
  const std::string fifo = scratchDir("module_file_fifo") + "/fifo";
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string &path : {std::string("/dev/zero"), fifo, std::string("/tmp")}) {
    INFO(path);
    const OpenedModuleFile opened = openModuleFile(memory, Module{}, path, /*named=*/true);
    CHECK(opened.problem == ModuleFileProblem::Unreadable);
    CHECK(opened.file == nullptr);
    CHECK(static_cast<bool>(mapRegularFile(path).getError()));
  }
  // A regular file is mapped.
  const std::string regular = scratchDir("module_file_fifo") + "/plain";
  writeFileBytes(regular, std::vector<uint8_t>{1, 2, 3});
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> mapped = mapRegularFile(regular);
  REQUIRE(mapped);
  CHECK((*mapped)->getBufferSize() == 3);
}
