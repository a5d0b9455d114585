#include "dumpsift/support/atomic_file.h"

#include "dumpsift/support/error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace dumpsift {

namespace {

/// `write` into the stream `out` of `path`, closed; the error names `path` and the cause.
llvm::Error writeAndClose(llvm::StringRef path, llvm::raw_fd_ostream &out,
                          llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  llvm::Error result = write(out);
  out.close();
  if (!result && out.has_error()) {
    std::error_code ec = out.error();
    out.clear_error();
    result = createError("cannot write '" + path + "': " + ec.message());
  }
  return result;
}

} // namespace

llvm::Error writeFileAtomically(llvm::StringRef path,
                                llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  // A path that exists and is neither a regular file nor a directory (/dev/null, a FIFO,
  // /dev/stdout) is written in place: a file renamed over it would replace the device.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) && llvm::sys::fs::exists(status) &&
      !llvm::sys::fs::is_regular_file(status) && !llvm::sys::fs::is_directory(status)) {
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return createError("cannot open '" + path + "': " + ec.message());
    return writeAndClose(path, out, write);
  }
  llvm::SmallString<256> temp_model(path);
  temp_model += ".tmp-%%%%%%%%";
  int fd = -1;
  llvm::SmallString<256> temp_path;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(temp_model, fd, temp_path))
    return createError("cannot create a file beside '" + path + "': " + ec.message());
  llvm::Error result = llvm::Error::success();
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    result = writeAndClose(path, out, write);
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
