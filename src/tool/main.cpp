#include <cstdio>
int main() {
  std::puts("dumpsift: under construction");
  return 0;
}
