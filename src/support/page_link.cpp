// linkFromPage (page_link.h).
#include "dumpsift/support/page_link.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

namespace {
/// `path` with every byte but unreserved characters and '/' percent-encoded (RFC 3986).
std::string percentEncoded(llvm::StringRef path) {
  std::string out;
  for (unsigned char c : path) {
    if (llvm::isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += char(c);
    else
      out += "%" + llvm::utohexstr(c, /*LowerCase=*/false, /*Width=*/2);
  }
  return out;
}
} // namespace

std::string linkFromPage(const std::string &page, const std::string &target) {
  llvm::SmallString<256> page_abs(page), target_abs(target);
  llvm::sys::fs::make_absolute(page_abs);
  llvm::sys::fs::make_absolute(target_abs);
  llvm::sys::path::remove_dots(page_abs, /*remove_dot_dot=*/true);
  llvm::sys::path::remove_dots(target_abs, /*remove_dot_dot=*/true);
  llvm::StringRef page_dir = llvm::sys::path::parent_path(page_abs);
  llvm::StringRef rest = target_abs.str();
  if (rest == page_dir)
    return ".";
  if (rest.consume_front(page_dir) && rest.consume_front("/"))
    return percentEncoded(rest);
  return percentEncoded(target_abs);
}

} // namespace dumpsift
