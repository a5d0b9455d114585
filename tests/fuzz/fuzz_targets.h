// Fuzz targets: one plain function per entry point of the library that reads untrusted bytes. The
// libFuzzer executables (tests/fuzz/libfuzzer_entry.cpp, built with -DDUMPSIFT_FUZZ=ON) call them,
// and so does the replay test (tests/fuzz/replay_test.cpp), which runs every file of
// fixtures/corpus/ through every target in the ordinary test build. How to run them:
// docs/fuzzing.md.
#pragma once

#include "dumpsift/dump/snapshot.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dumpsift::fuzz {

/// Each target accepts any bytes, returns 0, and must never crash, hang, leak or allocate without
/// bound. A target aborts (via FUZZ_CHECK) when the library breaks one of its documented contracts.

/// Opens `data` as a dump when it starts with the ELF magic, then reads the snapshot the way the
/// tools do (info, address space checks, every heap walker).
int fuzzElfCore(const uint8_t *data, size_t size);
/// The same for inputs that start with the minidump magic "MDMP".
int fuzzMinidump(const uint8_t *data, size_t size);
/// Decodes `data` as a fuzz process (see decodeFuzzProcess) and runs the glibc walker over it.
int fuzzGlibcWalker(const uint8_t *data, size_t size);
/// The same with the jemalloc walker.
int fuzzJemallocWalker(const uint8_t *data, size_t size);
/// The same with the coreclr, mono and hotspot walkers.
int fuzzManagedWalkers(const uint8_t *data, size_t size);
/// The same with the mimalloc walker.
int fuzzMimallocWalker(const uint8_t *data, size_t size);
/// The same with the musl mallocng walker.
int fuzzMuslWalker(const uint8_t *data, size_t size);
/// The same with the tcmalloc walker.
int fuzzTcmallocWalker(const uint8_t *data, size_t size);
/// The same with the go walker.
int fuzzGoWalker(const uint8_t *data, size_t size);
/// Every sniffer (quickCheck, validate, findCandidate), sniff(), and the framing decoders
/// (aws-chunked, AMQP) over `data` as one buffer.
int fuzzSniff(const uint8_t *data, size_t size);
/// The whole `analyze` pipeline (walkers, region scan, sniffing within the run's budget, findings,
/// the JSON report, the text summary and the HTML page, in memory) over `data` opened as a dump
/// when it starts with the ELF or minidump magic, else decoded as a fuzz process. The JSON must
/// parse; the text summary and `info`'s text must hold no control byte but newline and tab; the
/// page must be whole, valid UTF-8, and list warnings exactly when there are some.
int fuzzPipeline(const uint8_t *data, size_t size);

struct Target {
  const char *name; // "elf_core": the corpus folder fixtures/corpus/<name>/
  int (*run)(const uint8_t *, size_t);
};
/// Every target, in a fixed order.
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
