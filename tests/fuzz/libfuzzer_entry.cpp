// The libFuzzer entry point of one fuzz target: built once per target with
// -DDUMPSIFT_FUZZ_TARGET=<function> (tests/CMakeLists.txt, -DDUMPSIFT_FUZZ=ON).
#include "fuzz_targets.h"

#ifndef DUMPSIFT_FUZZ_TARGET
#error "define DUMPSIFT_FUZZ_TARGET to one of the functions in fuzz_targets.h"
#endif

/// libFuzzer calls this once per input; the target decides what the bytes mean.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return dumpsift::fuzz::DUMPSIFT_FUZZ_TARGET(data, size);
}
