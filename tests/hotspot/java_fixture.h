// The JDK the JVM tests run and the fixtures/java programs they compile with it.
#pragma once

#include "support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace dumpsift::test {

/// The JDK: DUMPSIFT_JAVA_HOME, else Debian's JDK 17.
inline std::string javaHome() {
  const char *home = std::getenv("DUMPSIFT_JAVA_HOME");
  return home ? home : "/usr/lib/jvm/java-17-openjdk-amd64";
}

/// Compiles fixtures/java/`program`.java into the build tree (once per JDK, and again only when
/// the source changed) and returns the class directory, or "" with `why` set when it cannot run
/// here (no JDK, no gcore).
inline std::string javaClasses(const std::string &program, std::string &why) {
  namespace fs = std::filesystem;
  const std::string java = javaHome() + "/bin/java", javac = javaHome() + "/bin/javac",
                    jhsdb = javaHome() + "/bin/jhsdb";
  for (const std::string &tool : {java, javac, jhsdb})
    if (!fs::exists(tool)) {
      why = tool + " is missing (install openjdk-17-jdk-headless: scripts/setup.sh --tests)";
      return "";
    }
  if (!canRunGcore()) {
    why = "gcore is missing or ptrace is not allowed";
    return "";
  }
  const std::string source = sourceDir() + "/fixtures/java/" + program + ".java";
  const std::string classes =
      binaryDir() + "/java-fixtures/" + fs::path(javaHome()).filename().string();
  const std::string compiled = classes + "/" + program + ".class";
  std::error_code ec;
  if (!fs::exists(compiled) || fs::last_write_time(compiled, ec) < fs::last_write_time(source)) {
    CommandResult r = runCommand("'" + javac + "' -nowarn -XDignore.symbol.file -d '" + classes +
                                 "' '" + source + "'");
    if (r.exit_code != 0) {
      why = "javac failed: " + r.err + r.out;
      return "";
    }
  }
  return classes;
}

} // namespace dumpsift::test
