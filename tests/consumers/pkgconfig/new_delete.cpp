// SPDX-License-Identifier: BSL-1.0
// A program linked with `pkg-config --libs memkit-new-delete`: its operator new must be memkit's.
#include <memkit/replacement.h>

#include <cstdio>

int main() {
  int* p = new int(42);
  const bool owned = memkit_owns(p) == 1;
  delete p;
  std::puts(owned ? "memkit-new-delete consumer: operator new is memkit's"
                  : "memkit-new-delete consumer: operator new is NOT memkit's");
  return owned ? 0 : 1;
}
