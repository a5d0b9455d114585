// Unit tests of the minidump stream helpers: maps lines, protections, contexts, strings, CodeView
// records and the small Linux text streams.
#include "../../src/dump/minidump_streams.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
namespace mdmp = dumpsift::detail::mdmp;

namespace {

// A stream over `bytes` (which must outlive it).
mdmp::Stream streamOf(uint32_t type, const std::vector<uint8_t> &bytes) {
  mdmp::Stream s;
  s.type = type;
  s.bytes = bytes;
  return s;
}

} // namespace

TEST_CASE("minidump streams: /proc/PID/maps lines") {
  auto e = mdmp::parseMapsLine(
      "7f5140521000-7f5140523000 rw-p 001c4000 08:01 2098078    /lib/x86_64-linux-gnu/libc.so");
  REQUIRE(e);
  CHECK(e->start == 0x7f5140521000);
  CHECK(e->end == 0x7f5140523000);
  CHECK(e->perms.str() == "rw-");
  CHECK_FALSE(e->shared);
  CHECK(e->offset == 0x1c4000);
  CHECK(e->inode == 2098078);
  CHECK(e->path == "/lib/x86_64-linux-gnu/libc.so");
  CHECK(mdmp::classifyMapsEntry(*e) == RegionClass::Image);

  auto top =
      mdmp::parseMapsLine("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]");
  REQUIRE(top);
  CHECK(top->end == 0xffffffffff601000);
  CHECK(top->perms.str() == "--x");
  CHECK(mdmp::classifyMapsEntry(*top) == RegionClass::Other);

  auto thread_stack = mdmp::parseMapsLine("7f00-8f00 rw-p 00000000 00:00 0 [stack:1234]");
  REQUIRE(thread_stack);
  CHECK(mdmp::classifyMapsEntry(*thread_stack) == RegionClass::Stack);
  auto named = mdmp::parseMapsLine("1000-2000 rw-s 00000000 00:00 0 [anon:scudo:primary]");
  REQUIRE(named);
  CHECK(named->shared);
  CHECK(mdmp::classifyMapsEntry(*named) == RegionClass::Anonymous);

  CHECK_FALSE(mdmp::parseMapsLine(""));
  CHECK_FALSE(mdmp::parseMapsLine("2000-1000 rw-p 00000000 00:00 0"));       // end < start
  CHECK_FALSE(mdmp::parseMapsLine("1000-2000 rw-p 00000000 00:00"));         // no inode
  CHECK_FALSE(mdmp::parseMapsLine("1000-2000 rwzp 00000000 00:00 0"));       // bad perms
  CHECK_FALSE(mdmp::parseMapsLine("1000-2000 rw-p 00000000 0000 0"));        // bad dev
  CHECK_FALSE(mdmp::parseMapsLine("1000-12345678901234567 rw-p 0 00:00 0")); // overflow
  CHECK_FALSE(mdmp::parseMapsLine("1000 rw-p 00000000 00:00 0"));            // no end
}

TEST_CASE("minidump streams: protections, contexts and CodeView records") {
  CHECK(mdmp::permsFromProtect(0x04).str() == "rw-");
  CHECK(mdmp::permsFromProtect(0x104).str() == "rw-"); // PAGE_GUARD ignored
  CHECK(mdmp::permsFromProtect(0x08).str() == "rw-");  // WRITECOPY
  CHECK(mdmp::permsFromProtect(0x20).str() == "r-x");
  CHECK(mdmp::permsFromProtect(0x80).str() == "rwx");
  CHECK(mdmp::permsFromProtect(0x01).str() == "---");
  CHECK(mdmp::permsFromProtect(0).str() == "---");

  std::vector<uint8_t> ctx(0x110, 0);
  for (int i = 0; i < 8; ++i) {
    ctx[0x98 + i] = static_cast<uint8_t>(0x11 * (i + 1)); // AMD64 Rsp
    ctx[0x100 + i] = static_cast<uint8_t>(0x21 + i);      // ARM64 Sp
  }
  ctx[0xc4] = 0x78; // x86 Esp
  ctx[0xc5] = 0x56;
  ctx[0xc6] = 0x34;
  ctx[0xc7] = 0x12;
  CHECK(mdmp::stackPointerFromContext(9, ctx) == 0x8877665544332211ull);
  CHECK(mdmp::stackPointerFromContext(0xc, ctx) == 0x2827262524232221ull);
  CHECK(mdmp::stackPointerFromContext(0x8003, ctx) == 0x2827262524232221ull);
  CHECK(mdmp::stackPointerFromContext(0, ctx) == 0x12345678u);
  CHECK_FALSE(mdmp::stackPointerFromContext(5, ctx)); // 32-bit ARM: not decoded
  CHECK_FALSE(mdmp::stackPointerFromContext(9, llvm::ArrayRef<uint8_t>(ctx).take_front(0x9f)));

  std::vector<uint8_t> elf = {'L', 'E', 'p', 'B', 0xde, 0xad, 0xbe, 0xef, 0x01};
  CHECK(mdmp::buildIdFromCodeView(elf) == "deadbeef01");
  std::vector<uint8_t> pdb = {'R', 'S', 'D', 'S', 1,  2,  3,  4,  5,    6, 7, 8,
                              9,   10,  11,  12,  13, 14, 15, 16, 0x10, 0, 0, 0};
  CHECK(mdmp::buildIdFromCodeView(pdb) == "0403020106050807090a0b0c0d0e0f1010");
  pdb.pop_back();
  CHECK(mdmp::buildIdFromCodeView(pdb) == ""); // too short for GUID + age
  CHECK(mdmp::buildIdFromCodeView(std::vector<uint8_t>{'N', 'B', '1', '0', 0, 0, 0, 0}) == "");
}

TEST_CASE("minidump streams: MINIDUMP_STRING decoding") {
  Diagnostics diags;
  // "Aé" then an unpaired high surrogate, length 6 bytes; then an odd length.
  std::vector<uint8_t> file = {6, 0, 0, 0, 'A', 0, 0xe9, 0, 0x00, 0xd8, 3, 0, 0, 0, 'B', 0, 'C'};
  auto s = mdmp::readString(file, 0, 1024, "here", diags);
  REQUIRE(s);
  CHECK(*s == "A\xc3\xa9\xef\xbf\xbd");
  auto odd = mdmp::readString(file, 10, 1024, "odd", diags);
  REQUIRE(odd);
  CHECK(*odd == "B"); // 3 bytes: the last half unit is dropped
  CHECK(diags.empty());
  CHECK_FALSE(mdmp::readString(file, 15, 1024, "short", diags));
  auto capped = mdmp::readString(file, 0, 2, "capped", diags);
  REQUIRE(capped);
  CHECK(*capped == "A");
  std::vector<Diagnostic> w = diags.warnings();
  REQUIRE(w.size() == 2);
  CHECK(w[0].where == "short");
  CHECK(w[1].message == "string at 0x0 is 6 bytes long; only the first 2 read");
}

TEST_CASE("minidump streams: MINIDUMP_STRING ends at its first NUL, and surrogate pairs decode") {
  Diagnostics diags;
  // U+1F600 as a surrogate pair, 'x', a NUL, then 'y' the name does not hold.
  std::vector<uint8_t> file = {10, 0, 0, 0, 0x3d, 0xd8, 0x00, 0xde, 'x', 0, 0, 0, 'y', 0};
  auto s = mdmp::readString(file, 0, 1024, "here", diags);
  REQUIRE(s);
  CHECK(*s == "\xf0\x9f\x98\x80x");
  CHECK(diags.empty());
}

TEST_CASE("minidump streams: status, cmdline and auxv") {
  mdmp::ProcStatus st = mdmp::parseProcStatus("Name:\tmy prog\nPid:\t77\n");
  CHECK(st.name == "my prog");
  CHECK(st.pid == 77u);
  CHECK_FALSE(mdmp::parseProcStatus("Name:\tx\nPid:\tnope\n").pid);

  auto cmd = [](std::string_view s) {
    return mdmp::parseCmdLine(
        llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(s.data()), s.size()));
  };
  CHECK(cmd(std::string_view("a\0b c\0\0", 7)) == "a b c");
  CHECK(cmd("./crash\n") == "./crash");
  CHECK(cmd("") == "");

  Diagnostics diags;
  std::vector<uint8_t> auxv32 = {6, 0, 0, 0, 0, 0x10, 0, 0, 3, 0, 0, 0, 0x34, 0, 0x40, 0, 1, 2};
  auto pairs = mdmp::parseAuxv(streamOf(0x47670008, auxv32), 4, diags);
  CHECK(pairs == std::vector<std::pair<uint64_t, uint64_t>>{{6, 0x1000}, {3, 0x400034}});
  std::vector<Diagnostic> w = diags.warnings();
  REQUIRE(w.size() == 1);
  CHECK(w[0].message == "ends with 2 bytes that are not a whole (type, value) pair");
}

TEST_CASE("minidump streams: a list's damaged entries are named up to a cap, then counted") {
  // 40 ThreadList entries (48 bytes each: the context's location at offset 40), every context
  // past the end of a 64-byte file.
  constexpr size_t kThreads = 40;
  std::vector<uint8_t> bytes(4 + kThreads * 48, 0);
  bytes[0] = kThreads;
  for (size_t i = 0; i < kThreads; ++i) {
    uint8_t *entry = bytes.data() + 4 + i * 48;
    entry[0] = static_cast<uint8_t>(100 + i); // ThreadId
    entry[40] = 0x10;                         // Context.DataSize
    entry[44 + 3] = 0x7f;                     // Context.RVA 0x7f000000
  }
  const std::vector<uint8_t> file(64, 0);
  Diagnostics diags;
  const std::vector<mdmp::ThreadEntry> threads =
      mdmp::parseThreadList(file, streamOf(3, bytes), diags);
  REQUIRE(threads.size() == kThreads);
  CHECK(threads[39].tid == 139);
  CHECK(threads[39].context.empty());
  const std::vector<Diagnostic> warnings = diags.warnings();
  REQUIRE(warnings.size() == mdmp::EntryWarnings::kMaxEntryWarnings + 1);
  CHECK(warnings[0].where == "thread 100 context");
  CHECK(warnings[0].message == "data at 0x7f000000 lies past the end of the file; not read");
  CHECK(warnings[15].where == "thread 115 context");
  CHECK(warnings[16].where == "stream ThreadList (0x00000003)");
  CHECK(warnings[16].message == "24 more warnings about its entries not listed");
}
