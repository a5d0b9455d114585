#!/bin/sh
# Hashing throughput: how many bytes per second llvm::xxHash64 gets through on one core (the
# analysis hashes every kept buffer; duplicates and growth chains build on those hashes), and the
# memcmp rate that confirms a copy or a prefix. Builds bench/hash_throughput.cpp with the flags of
# a release build against Debian's LLVM 14 and runs it.
#
# Usage: bench/hash_throughput.sh [total MiB, default 1024] [buffer KiB, default 1024]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/dumpsift-hash-throughput.$$
trap 'rm -f "$out"' EXIT
llvm_config=$(command -v llvm-config-14 || command -v llvm-config)
# shellcheck disable=SC2046 # llvm-config prints several flags
c++ -std=c++20 -O2 -DNDEBUG -Wall -Wextra $("$llvm_config" --cxxflags | sed 's/-fno-exceptions//; s/-std=[^ ]*//') \
  "$here/hash_throughput.cpp" -o "$out" $("$llvm_config" --ldflags) -lLLVM-14
"$out" "$@"
