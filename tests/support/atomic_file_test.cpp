// Output files: written whole or not at all, and a device or a FIFO written in place, never
// replaced by a file (`--report /dev/null` once left /dev/null a regular file).
#include "dumpsift/support/atomic_file.h"
#include "support/test_support.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <thread>

using namespace dumpsift;
using namespace dumpsift::test;
namespace fs = std::filesystem;

TEST_CASE("an output file is replaced whole, or left as it was when writing fails") {
  const std::string dir = scratchDir("atomic_file");
  const std::string path = dir + "/report.json";
  REQUIRE_FALSE(llvm::errorToBool(writeFileAtomically(path, "first")));
  CHECK(readText(path) == "first");
  llvm::Error failed = writeFileAtomically(path, [](llvm::raw_ostream &out) {
    out << "half";
    return llvm::make_error<llvm::StringError>("stopped", llvm::inconvertibleErrorCode());
  });
  CHECK(llvm::toString(std::move(failed)) == "stopped");
  CHECK(readText(path) == "first");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1); // no temporary
}

TEST_CASE("an output path that is a FIFO is written in place and stays a FIFO") {
  const std::string path = scratchDir("atomic_file_fifo") + "/out";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  std::string read;
  std::thread reader([&] {
    std::ifstream in(path);
    read.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const bool failed = llvm::errorToBool(writeFileAtomically(path, "through the pipe"));
  reader.join();
  CHECK_FALSE(failed);
  CHECK(read == "through the pipe");
  CHECK(fs::is_fifo(path));
}
