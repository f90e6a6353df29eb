// SPDX-License-Identifier: BSL-1.0
// examples/pool_example.cpp: an order book whose orders live in a memkit::pool.
//
// Orders are placed and cancelled all the time. A pool of order-sized blocks turns each of those
// into a pointer pop or push, and reserving the usual book depth keeps the opening burst from
// calling the heap at all.
#include <memkit/pool.hpp>

#include <cstdio>
#include <new>

namespace {

struct order {
  long id;
  double price;
  int quantity;
  order* next; // resting orders, newest first
};

} // namespace

int main() {
  memkit::pool_options options;
  options.block_size = sizeof(order);
  options.block_alignment = alignof(order);
  options.reserved_blocks = 1000;
  memkit::pool<> pool(options);

  order* book = nullptr;
  long resting = 0;
  for (long id = 0; id < 20000; ++id) {
    book = ::new (pool.allocate(sizeof(order), alignof(order)))
        order{id, 100.0 + static_cast<double>(id % 50) / 100, 1 + static_cast<int>(id % 7), book};
    ++resting;
    if (id % 3 == 0) { // a third of the orders are cancelled right away
      order* cancelled = book;
      book = cancelled->next;
      cancelled->~order();
      pool.deallocate(cancelled, sizeof(order), alignof(order));
      --resting;
    }
  }

  long counted = 0;
  long quantity = 0;
  for (const order* o = book; o != nullptr; o = o->next) {
    if (!pool.owns(o)) {
      std::puts("an order lives outside the pool");
      return 1;
    }
    ++counted;
    quantity += o->quantity;
  }
  std::printf("%ld resting orders (%ld lots) in %zu chunks holding %zu blocks of %zu bytes\n",
              counted, quantity, pool.chunk_count(), pool.capacity(), pool.block_size());

  while (book != nullptr) {
    order* o = book;
    book = o->next;
    o->~order();
    pool.deallocate(o, sizeof(order), alignof(order));
  }
  return counted == resting && pool.in_use() == 0 ? 0 : 1;
}
