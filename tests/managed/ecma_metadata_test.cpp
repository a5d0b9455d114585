// The ECMA-335 metadata reader (src/heap/managed/ecma_metadata.cpp) on metadata laid out by hand
// after ECMA-335 II.24: the widths a table's rows take from the row counts and heap sizes (the
// edges the Holders.cs core does not reach: 4-byte string indexes, a coded index widened by a
// large table), and hostile bytes. tests/managed/managed_dumps_test.cpp checks it on a real core.
#include "../../src/heap/managed/ecma_metadata.h"
#include "support/byte_builder.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

constexpr uint64_t kRoot = 0x100000, kRegion = 0x200000;

/// Lays out metadata at kRoot: a root with the #~ and #Strings streams, the tables Module (1 row),
/// TypeRef (`type_refs` rows), TypeDef (2 rows), Field (3 rows), 4-byte #Strings indexes. TypeDef
/// row 2 is Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream, Field row 3 _outputBuffer.
/// Returns where the module's name lies in #Strings.
uint64_t layOut(FakeMemory &fake, uint32_t type_refs) {
  fake.addRegion(kRoot, kRegion);
  // #Strings: index 0 is the empty string.
  const std::vector<std::string> strings = {"",
                                            "Holders.exe",
                                            "ChunkedUploadWrapperStream",
                                            "Amazon.Runtime.Internal.Util",
                                            "_outputBuffer",
                                            "_inputBuffer",
                                            "Channel"};
  std::vector<uint32_t> index;
  std::string heap;
  for (const std::string &s : strings) {
    index.push_back(static_cast<uint32_t>(heap.size()));
    heap += s;
    heap.push_back('\0');
  }
  heap.resize((heap.size() + 3) & ~size_t(3));

  // The tables stream.
  std::vector<uint8_t> t;
  auto u8 = [&](uint8_t v) { t.push_back(v); };
  auto u16 = [&](uint16_t v) { u8(v & 0xFF), u8(v >> 8); };
  auto u32 = [&](uint32_t v) { u16(v & 0xFFFF), u16(v >> 16); };
  auto index16or32 = [&](uint32_t v, bool wide) { wide ? u32(v) : u16(static_cast<uint16_t>(v)); };
  u32(0), u8(2), u8(0), u8(0x01 /* 4-byte #Strings indexes */), u8(1);
  const uint64_t valid = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4);
  u32(static_cast<uint32_t>(valid)), u32(0), u32(0), u32(0);
  u32(1), u32(type_refs), u32(2), u32(3);
  u16(0), u32(index[1]), u16(1), u16(0), u16(0); // Module: generation, name, mvid, encid, encbase
  // TypeRef: ResolutionScope (2 tag bits: 4 bytes past 2^14 rows), TypeName, TypeNamespace.
  const bool wide_scope = type_refs >= (1u << 14);
  for (uint32_t i = 0; i < type_refs; ++i)
    index16or32(0, wide_scope), u32(index[6]), u32(0);
  // TypeDef: Flags, TypeName, TypeNamespace, Extends (TypeDefOrRef, 2 tag bits), FieldList,
  // MethodList.
  for (uint32_t row = 1; row <= 2; ++row) {
    u32(0x00100000), u32(row == 2 ? index[2] : index[6]), u32(row == 2 ? index[3] : 0);
    index16or32(0, wide_scope), u16(static_cast<uint16_t>(row)), u16(1);
  }
  // Field: Flags, Name, Signature.
  for (uint32_t name : {index[5], index[5], index[4]})
    u16(1), u32(name), u16(0);
  t.resize((t.size() + 3) & ~size_t(3));

  // The root: signature, versions, reserved, the version string, flags, two stream headers.
  std::vector<uint8_t> root;
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      root.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put32(0x424A5342), put32(0x00010001), put32(0);
  const std::string version = "v4.0.30319\0\0";
  put32(static_cast<uint32_t>(version.size()));
  root.insert(root.end(), version.begin(), version.end());
  put32(0x00020000); // flags 0, 2 streams
  const uint32_t headers = 2 * 8 + 4 + 12;
  const uint32_t tables_at = static_cast<uint32_t>(root.size()) + headers;
  const uint32_t strings_at = tables_at + static_cast<uint32_t>(t.size());
  put32(tables_at), put32(static_cast<uint32_t>(t.size()));
  for (char c : std::string("#~\0\0", 4))
    root.push_back(static_cast<uint8_t>(c));
  put32(strings_at), put32(static_cast<uint32_t>(heap.size()));
  for (char c : std::string("#Strings\0\0\0\0", 12))
    root.push_back(static_cast<uint8_t>(c));
  REQUIRE(root.size() == tables_at);
  REQUIRE(strings_at + heap.size() <= kRegion);
  fake.putBytes(kRoot, root);
  fake.putBytes(kRoot + tables_at, t);
  fake.putBytes(kRoot + strings_at, llvm::StringRef(heap));
  return kRoot + strings_at + index[1];
}

} // namespace

TEST_CASE("ecma metadata: names from TypeDef and Field rows, the row widths from the counts") {
  for (uint32_t type_refs : {3u, 70000u}) {
    INFO(type_refs << " TypeRef rows");
    FakeMemory fake;
    const uint64_t module_name = layOut(fake, type_refs);
    std::unique_ptr<Snapshot> snap = fake.snapshot();
    AddressSpace memory(*snap);
    std::optional<EcmaMetadata> md = EcmaMetadata::holding(memory, module_name, 64 << 20);
    REQUIRE(md);
    CHECK(md->stringsHold(module_name));
    CHECK(md->typeName(2) == "Amazon.Runtime.Internal.Util.ChunkedUploadWrapperStream");
    CHECK(md->typeName(1) == "Channel"); // no namespace
    CHECK(md->fieldName(3) == "_outputBuffer");
    CHECK(md->fieldName(1) == "_inputBuffer");
    CHECK(md->typeName(0).empty());
    CHECK(md->typeName(3).empty());
    CHECK(md->fieldName(4).empty());
    // A pointer outside its #Strings finds no metadata that holds it.
    CHECK_FALSE(EcmaMetadata::holding(memory, kRoot + 8, 64 << 20));
  }
}

TEST_CASE("ecma metadata: hostile bytes give no metadata, never a read past the dump") {
  FakeMemory fake;
  const uint64_t module_name = layOut(fake, 3);
  // Tables whose rows would run past the stream: row counts past what the reader believes, then
  // a count just small enough whose rows still overrun.
  for (uint32_t rows : {0xFFFFFFFFu, 1u << 24}) {
    INFO(rows);
    FakeMemory bad = fake;
    const uint64_t tables = kRoot + 12 + 4 + 12 + 4 + 32;
    bad.put32(tables + 24 + 4, rows); // the TypeRef count
    std::unique_ptr<Snapshot> snap = bad.snapshot();
    AddressSpace memory(*snap);
    CHECK_FALSE(EcmaMetadata::holding(memory, module_name, 64 << 20));
  }
  // A stream header that points past the metadata's bound, and one with no NUL in its name.
  for (uint64_t at : {kRoot + 12 + 4 + 12 + 4, kRoot + 12 + 4 + 12 + 4 + 8}) {
    FakeMemory bad = fake;
    bad.put32(at, 0x7FFFFFFF);
    bad.put32(at + 4, 0x7FFFFFFF);
    std::unique_ptr<Snapshot> snap = bad.snapshot();
    AddressSpace memory(*snap);
    CHECK_FALSE(EcmaMetadata::holding(memory, module_name, 64 << 20));
  }
  // The signature alone at the start of the dump's memory: searched down to it, then stopped.
  FakeMemory lone;
  lone.addRegion(0x1000, 0x1000);
  lone.put32(0x1000, 0x424A5342);
  std::unique_ptr<Snapshot> snap = lone.snapshot();
  AddressSpace memory(*snap);
  CHECK_FALSE(EcmaMetadata::holding(memory, 0x1ff0, 64 << 20));
}
