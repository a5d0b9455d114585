// The heap walker registry as the walker tests reach it.
#pragma once

#include "dumpsift/heap/walker.h"

#include <catch2/catch.hpp>

namespace dumpsift::test {

/// The registered walker named `name`; fails the test when there is none.
inline const HeapWalker &walkerNamed(llvm::StringRef name) {
  for (const auto &w : heapWalkers())
    if (w->name() == name)
      return *w;
  FAIL("no walker named " << name.str());
  return *heapWalkers().front();
}

} // namespace dumpsift::test
