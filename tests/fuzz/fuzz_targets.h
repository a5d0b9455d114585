// Fuzz targets: one plain function per entry point of the library that reads untrusted bytes,
// listed once in fuzz_targets.def. The libFuzzer executables (tests/fuzz/libfuzzer_entry.cpp,
// built with -DDUMPSIFT_FUZZ=ON) call them, and so does the replay test
// (tests/fuzz/replay_test.cpp), which runs every file of fixtures/corpus/ through every target in
// the ordinary test build. How to run them: docs/fuzzing.md.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift::fuzz {

// The target functions, one per row of fuzz_targets.def (which says what each one feeds).
#define DUMPSIFT_FUZZ_TARGET(name, function) int function(const uint8_t *data, size_t size);
#include "fuzz_targets.def"
#undef DUMPSIFT_FUZZ_TARGET

struct Target {
  const char *name; // "elf_core": the corpus folder fixtures/corpus/<name>/
  int (*run)(const uint8_t *, size_t);
};
/// Every target, in the order of fuzz_targets.def.
const std::vector<Target> &targets();

// ---------------------------------------------------------------------------------------------
// The fuzz process: a compact encoding of a process's memory that the walker targets decode into a
// Snapshot whose memory views point into the input itself (no copy), so a read past a region's
// bytes is a read past the input, which AddressSanitizer reports.
//
//   u8 flags             bit 0: 32-bit process (pointer size 4); bit 1: os "windows" (else linux);
//                        bit 2: the module mscorwks.dll (a .NET Framework 2.0 process)
//   then records, until the input ends (at most kMaxFuzzRegions regions):
//   u8 0xff, u64 type, u64 value                                    an auxv pair
//   u8 attrs, u64 start, u32 size, u32 captured, captured bytes      a region
//     attrs bits 0-2: backing file (an index into fuzzProcessFiles()); bits 3-5: RegionClass
//     (modulo 5); bit 6: writable; bit 7: also a module (over the following regions of the
//     same file that touch it)
// All integers are little-endian. A region's captured bytes are clipped to its size and to the
// input; regions of size 0 and regions that overlap an earlier one are dropped.
// ---------------------------------------------------------------------------------------------

constexpr size_t kMaxFuzzRegions = 64;
constexpr uint8_t kAuxvRecord = 0xff;

/// The backing files a fuzz process region may name ("" first: anonymous).
const std::vector<std::string> &fuzzProcessFiles();

/// The snapshot `data` encodes. Its memory views point into `data`, which must outlive it.
std::unique_ptr<Snapshot> decodeFuzzProcess(const uint8_t *data, size_t size);

/// Encodes the regions of `snapshot` that `keep` selects, each region's captured bytes cut to
/// `max_bytes_per_region`, plus its auxv: the seed-corpus maker's inverse of decodeFuzzProcess.
/// Backing files are mapped to the nearest name in fuzzProcessFiles() (libc, coreclr, mono, the
/// executable, and libjvm.so for any other file).
std::string encodeFuzzProcess(const Snapshot &snapshot,
                              const std::function<bool(const Region &)> &keep,
                              uint64_t max_bytes_per_region);

} // namespace dumpsift::fuzz
