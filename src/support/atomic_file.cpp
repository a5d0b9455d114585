#include "dumpsift/support/atomic_file.h"

#include "dumpsift/support/error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  llvm::SmallString<256> temp_model(path);
  temp_model += ".tmp-%%%%%%%%";
  int fd = -1;
  llvm::SmallString<256> temp_path;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(temp_model, fd, temp_path))
    return createError("cannot create a file beside '" + path + "': " + ec.message());
  llvm::Error result = llvm::Error::success();
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    result = write(out);
    out.close();
    if (!result && out.has_error()) {
      std::error_code ec = out.error();
      out.clear_error();
      result = createError("cannot write '" + path + "': " + ec.message());
    }
  }
  if (!result) {
    if (std::error_code ec = llvm::sys::fs::rename(temp_path, path))
      result = createError("cannot rename onto '" + path + "': " + ec.message());
  }
  if (result)
    (void)llvm::sys::fs::remove(temp_path);
  return result;
}

llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef content) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &out) {
    out << content;
    return llvm::Error::success();
  });
}

} // namespace dumpsift
