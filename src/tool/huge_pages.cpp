// The tool's large allocations on transparent huge pages.
//
// The analysis builds a few arrays of tens to hundreds of megabytes on a dense managed heap (the
// holders pass's directory and graph, a walker's candidates), each touched once as it is filled.
// glibc maps each such block fresh, and the kernel then faults it in 4 KiB at a time: on the
// CoreCLR bench core (5 M objects) about 300,000 faults, which cost more than the work on a
// virtual machine where a fault traps to the hypervisor (docs/performance.md, "Huge pages"). With
// the kernel's transparent huge pages in `madvise` mode (Debian's default) a region must ask for
// them; glibc asks only when told at start-up (GLIBC_TUNABLES=glibc.malloc.hugetlb=1). So the
// tool's operator new asks for the blocks it hands out: for an allocation of kHugeAllocation bytes
// or more, the 2 MiB pages wholly inside it are advised MADV_HUGEPAGE before anything touches
// them. Memory stays malloc's (operator delete frees it as before), nothing else changes, and an
// advice the kernel refuses is ignored.
//
// Not under AddressSanitizer, which must see every operator new itself.
#include <cstdint>
#include <cstdlib>
#include <new>
#include <sys/mman.h>

// AddressSanitizer: GCC says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DUMPSIFT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DUMPSIFT_ASAN 1
#endif

#if !defined(DUMPSIFT_ASAN) && defined(MADV_HUGEPAGE)

namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kHugeAllocation = std::size_t(4) << 20;

/// Asks for huge pages over the 2 MiB pages wholly inside [p, p + n).
void adviseHugePages(void *p, std::size_t n) {
  const std::uintptr_t start =
      (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~std::uintptr_t(kHugePage - 1);
  const std::uintptr_t end =
      (reinterpret_cast<std::uintptr_t>(p) + n) & ~std::uintptr_t(kHugePage - 1);
  if (end > start)
    (void)madvise(reinterpret_cast<void *>(start), end - start, MADV_HUGEPAGE);
}

/// malloc's block of `n` bytes, on huge pages when it is large; nullptr when there is none.
void *allocateAdvised(std::size_t n) {
  void *p = std::malloc(n ? n : 1);
  if (p && n >= kHugeAllocation)
    adviseHugePages(p, n);
  return p;
}

} // namespace

/// The replaceable allocation functions (the array and nothrow forms call these in libstdc++ and
/// are replaced too, so that each pairs with the operator delete that frees with free()).
void *operator new(std::size_t n) {
  if (void *p = allocateAdvised(n))
    return p;
  throw std::bad_alloc();
}

void *operator new[](std::size_t n) {
  return operator new(n);
}

void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  return allocateAdvised(n);
}

void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
  return allocateAdvised(n);
}

#endif
