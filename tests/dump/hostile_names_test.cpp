// Names a dump hands over (module paths, process names, warnings) are bounded and valid UTF-8:
// the regression files of the fuzz corpus (fixtures/corpus/minidump/regress-*, docs/fuzzing.md)
// checked for what they broke, and the UTF-8 repair itself. tests/report/info_test.cpp checks
// that the same files give `info --json` valid and bounded.
#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/utf8.h"
#include "support/dumps.h"

#include <catch2/catch.hpp>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The fuzz corpus file fixtures/corpus/minidump/<name>, opened.
std::unique_ptr<Snapshot> openRegression(const std::string &name) {
  return mustOpenDump(sourceDir() + "/fixtures/corpus/minidump/" + name);
}

} // namespace

TEST_CASE("utf8: valid text is kept, each bad byte becomes U+FFFD") {
  CHECK(isValidUtf8("plain /usr/lib/libc.so.6"));
  CHECK(isValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(isValidUtf8("\xc3"));             // cut sequence
  CHECK_FALSE(isValidUtf8("\xc0\xaf"));         // overlong
  CHECK_FALSE(isValidUtf8("\xed\xa0\x80"));     // surrogate
  CHECK_FALSE(isValidUtf8("\xf4\x90\x80\x80")); // above U+10FFFF
  CHECK(toValidUtf8("a\xff"
                    "b") == "a\xef\xbf\xbd"
                            "b");
  CHECK(toValidUtf8("\xe2\x82") == "\xef\xbf\xbd\xef\xbf\xbd");
  std::string s = "ok";
  makeValidUtf8(s);
  CHECK(s == "ok");
}

TEST_CASE("minidump: module names that are not UTF-8 are repaired") {
  auto snap = openRegression("regress-invalid-utf8-module-name.dmp");
  for (const Module &m : snap->modules)
    CHECK(isValidUtf8(m.path));
  for (const Region &r : snap->regions)
    CHECK(isValidUtf8(r.backing_file));
}

TEST_CASE("minidump: module names sharing one string stay within twice the file size") {
  const std::string name = "regress-module-names-share-one-string.dmp";
  const size_t file_size = readFileBytes(sourceDir() + "/fixtures/corpus/minidump/" + name).size();
  auto snap = openRegression(name);
  size_t name_bytes = 0;
  for (const Module &m : snap->modules)
    name_bytes += m.path.size();
  // Before the budget followed the file size, this 46 KB file gave 7 MB of names.
  CHECK(name_bytes <= std::max<size_t>(2 * file_size, 64 * 1024));
}
