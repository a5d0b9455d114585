#include "dumpsift/sniff/budget.h"

namespace dumpsift {

namespace {
thread_local SniffBudget *t_current = nullptr;
} // namespace

SniffBudget *SniffBudget::current() {
  return t_current;
}

SniffBudget::Use::Use(SniffBudget &budget) : previous_(t_current) {
  t_current = &budget;
}

SniffBudget::Use::~Use() {
  t_current = previous_;
}

} // namespace dumpsift
