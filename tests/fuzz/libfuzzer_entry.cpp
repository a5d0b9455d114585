// The libFuzzer entry point of one fuzz target: built once per target with
// -DDUMPSIFT_FUZZ_ENTRY=<function> (tests/CMakeLists.txt, -DDUMPSIFT_FUZZ=ON).
#include "fuzz_targets.h"

#ifndef DUMPSIFT_FUZZ_ENTRY
#error "define DUMPSIFT_FUZZ_ENTRY to one of the functions of fuzz_targets.def"
#endif

/// libFuzzer calls this once per input; the target decides what the bytes mean.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return dumpsift::fuzz::DUMPSIFT_FUZZ_ENTRY(data, size);
}
