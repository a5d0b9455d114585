// printable (dumpsift/support/terminal_text.h): what the text writers do to every string from a
// dump, so that a hostile dump cannot drive the user's terminal.
#include "dumpsift/support/terminal_text.h"

#include <catch2/catch.hpp>
#include <string>

using namespace dumpsift;

TEST_CASE("support: printable escapes C0, DEL and C1 controls and keeps everything else") {
  CHECK(printable("plain /usr/bin/nginx: worker process") ==
        "plain /usr/bin/nginx: worker process");
  CHECK(printable("C:\\Windows\\System32\\ntdll.dll") == "C:\\Windows\\System32\\ntdll.dll");
  CHECK(printable("caf\xc3\xa9 \xe2\x82\xac") == "caf\xc3\xa9 \xe2\x82\xac"); // é, €: not C1
  CHECK(printable("evil\x1b[2J\x1b]0;owned\x07\rfake\nline\t\x7f") ==
        "evil\\x1b[2J\\x1b]0;owned\\x07\\x0dfake\\x0aline\\x09\\x7f");
  CHECK(printable(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(printable("csi\xc2\x9b"
                  "31m, nel\xc2\x85") == "csi\\u009b31m, nel\\u0085");
  CHECK(printable("cut \xc2") == "cut \xc2"); // a lone lead byte is no control
  CHECK(isPrintable("ok"));
  CHECK_FALSE(isPrintable("\x1b"));
  CHECK_FALSE(isPrintable("\xc2\x80"));
  // Every byte value: the result holds no control character at all.
  std::string all;
  for (int c = 0; c < 256; ++c)
    all += static_cast<char>(c);
  all += "\xc2\x80\xc2\x9f";
  const std::string safe = printable(all);
  CHECK(isPrintable(safe));
  for (char c : safe)
    CHECK_FALSE((static_cast<unsigned char>(c) < 0x20 || c == 0x7f));
}
