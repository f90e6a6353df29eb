// SPDX-License-Identifier: BSL-1.0
// tests/tagged_stack_test.cpp: the lock-free stack of block handles of
// memkit/detail/tagged_stack.hpp, on its own: order, chains, the handed-out link convention its
// owners build on, ABA, and threads racing on it.
#include "memkit/detail/tagged_stack.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/run_threads.hpp"

namespace {

using memkit::detail::block_handle;
using memkit::detail::handed_out;
using memkit::detail::max_handle;
using memkit::detail::no_block;
using memkit::detail::tagged_stack;
using memkit::test::run_threads;

// Fixed so that a failure reproduces; printed by every randomised assertion.
constexpr std::uint64_t seed = 20261126;

// The side links of `n` blocks, handles 1 to n (index 0, `no_block`, unused), as an owner keeps
// them; `links()` is the callable the stack takes.
class link_table {
public:
  explicit link_table(std::size_t n) : links_(n + 1) {}

  std::atomic<block_handle>& operator[](block_handle h) { return links_[h]; }
  auto links() {
    return [this](block_handle h) -> std::atomic<block_handle>& { return links_[h]; };
  }
  std::size_t size() const noexcept { return links_.size() - 1; }

  // \returns the handles from `s`'s top to its bottom. \requires quiescence; at most size() + 1
  // of them, so that a cycle ends the walk (and fails the caller's count).
  std::vector<block_handle> walk(const tagged_stack& s) const {
    std::vector<block_handle> out;
    for (block_handle h = s.top(); h != no_block && out.size() <= size();
         h = links_[h].load(std::memory_order_relaxed)) {
      out.push_back(h);
      if (h == handed_out || h > size()) {
        break; // not a handle of this table: the caller's check reports it
      }
    }
    return out;
  }

private:
  std::vector<std::atomic<block_handle>> links_;
};

// The owner's side of a free, as concurrent_pool does it: one compare-and-swap from `handed_out`
// claims the block, and fails for a block that is free (a double free), even for two racing frees.
bool claim(std::atomic<block_handle>& link) {
  block_handle expected = handed_out;
  return link.compare_exchange_strong(expected, no_block, std::memory_order_relaxed);
}

TEST(TaggedStack, EmptyStackPopsNoBlock) {
  link_table l(4);
  tagged_stack s;
  EXPECT_EQ(s.top(), no_block);
  EXPECT_EQ(s.pop(l.links()), no_block);
  EXPECT_EQ(s.pop(l.links()), no_block);
  s.push(2, 2, l.links());
  EXPECT_EQ(s.pop(l.links()), 2u);
  EXPECT_EQ(s.pop(l.links()), no_block) << "a stack emptied by pops stays empty";
  EXPECT_EQ(s.top(), no_block);
}

TEST(TaggedStack, SingleHandlesComeBackLastInFirstOut) {
  constexpr std::size_t n = 100;
  link_table l(n);
  tagged_stack s;
  for (block_handle h = 1; h <= n; ++h) {
    s.push(h, h, l.links());
    EXPECT_EQ(s.top(), h);
  }
  for (block_handle h = n; h >= 1; --h) {
    ASSERT_EQ(s.pop(l.links()), h);
  }
  EXPECT_EQ(s.pop(l.links()), no_block);

  // Interleaved: push 1 2, pop 2, push 3 4, pop 4 3 1.
  s.push(1, 1, l.links());
  s.push(2, 2, l.links());
  EXPECT_EQ(s.pop(l.links()), 2u);
  s.push(3, 3, l.links());
  s.push(4, 4, l.links());
  EXPECT_EQ(s.pop(l.links()), 4u);
  EXPECT_EQ(s.pop(l.links()), 3u);
  EXPECT_EQ(s.pop(l.links()), 1u);
  EXPECT_EQ(s.pop(l.links()), no_block);
}

TEST(TaggedStack, PushedChainSitsOnTopInItsOwnOrder) {
  link_table l(8);
  tagged_stack s;
  s.push(1, 1, l.links());
  s.push(2, 2, l.links());
  // The chain 5 -> 3 -> 7 -> 4; the last link holds garbage the push must overwrite.
  l[5] = 3;
  l[3] = 7;
  l[7] = 4;
  l[4] = 6;
  s.push(5, 4, l.links());
  EXPECT_EQ(s.top(), 5u);
  EXPECT_EQ(l.walk(s), (std::vector<block_handle>{5, 3, 7, 4, 2, 1}));
  EXPECT_EQ(l[4].load(), 2u) << "the chain's last link points at the old top";
  for (block_handle expected : {5u, 3u, 7u, 4u, 2u, 1u}) {
    ASSERT_EQ(s.pop(l.links()), expected);
  }
  EXPECT_EQ(s.pop(l.links()), no_block);

  // A chain onto an empty stack ends the stack: its last link becomes no_block.
  l[6] = 8;
  l[8] = 5;
  s.push(6, 8, l.links());
  EXPECT_EQ(l[8].load(), no_block);
  EXPECT_EQ(l.walk(s), (std::vector<block_handle>{6, 8}));
}

TEST(TaggedStack, ClearEmptiesTheStackAndItWorksAfterwards) {
  link_table l(10);
  tagged_stack s;
  for (block_handle h = 1; h <= 10; ++h) {
    s.push(h, h, l.links());
  }
  EXPECT_EQ(l.walk(s).size(), 10u);
  s.clear();
  EXPECT_EQ(s.top(), no_block);
  EXPECT_EQ(s.pop(l.links()), no_block);
  s.push(7, 7, l.links());
  s.push(3, 3, l.links());
  EXPECT_EQ(l.walk(s), (std::vector<block_handle>{3, 7})) << "nothing from before clear() is back";
  EXPECT_EQ(s.pop(l.links()), 3u);
  EXPECT_EQ(s.pop(l.links()), 7u);
  EXPECT_EQ(s.pop(l.links()), no_block);
}

// The head packs a handle into 32 bits beside the tag: the largest handles survive unchanged.
TEST(TaggedStack, LargestHandlesSurviveThePackedHead) {
  std::map<block_handle, std::atomic<block_handle>> sparse;
  const auto links = [&](block_handle h) -> std::atomic<block_handle>& { return sparse[h]; };
  tagged_stack s;
  const block_handle handles[] = {1, 0x7FFFFFFFu, 0x80000000u, max_handle - 1, max_handle};
  for (block_handle h : handles) {
    s.push(h, h, links);
    EXPECT_EQ(s.top(), h);
  }
  for (std::size_t i = std::size(handles); i-- > 0;) {
    ASSERT_EQ(s.pop(links), handles[i]);
  }
  EXPECT_EQ(s.pop(links), no_block);
}

// The convention of handed_out, as concurrent_pool uses it: the owner marks a popped block's link
// handed_out; a free claims it with one compare-and-swap back to no_block and pushes it. The stack
// never leaves handed_out in the link of a free block, so a second free, or a free of a block that
// was never handed out, fails its claim wherever the block sits in the stack.
TEST(TaggedStack, HandedOutLinkDetectsDoubleAndForeignFreesWithOneCompareAndSwap) {
  constexpr std::size_t n = 6;
  link_table l(n);
  tagged_stack s;
  for (block_handle h = n; h >= 1; --h) {
    s.push(h, h, l.links());
  }
  const block_handle a = s.pop(l.links());
  const block_handle b = s.pop(l.links());
  ASSERT_EQ(a, 1u);
  ASSERT_EQ(b, 2u);
  l[a].store(handed_out);
  l[b].store(handed_out);

  // Free blocks: the top (link to a handle), the middle, the bottom (link no_block).
  for (block_handle h : {3u, 4u, block_handle{n}}) {
    EXPECT_FALSE(claim(l[h])) << "block " << h << " is free, its claim must fail";
  }
  EXPECT_EQ(l.walk(s), (std::vector<block_handle>{3, 4, 5, 6})) << "failed claims change nothing";

  ASSERT_TRUE(claim(l[a]));
  s.push(a, a, l.links());
  EXPECT_FALSE(claim(l[a])) << "a second free of a block on top of the stack";
  ASSERT_TRUE(claim(l[b]));
  s.push(b, b, l.links());
  EXPECT_FALSE(claim(l[a])) << "a second free of a block below the top";
  EXPECT_FALSE(claim(l[b]));

  const std::vector<block_handle> free = l.walk(s);
  EXPECT_EQ(free, (std::vector<block_handle>{2, 1, 3, 4, 5, 6}));
  for (block_handle h : free) {
    EXPECT_NE(l[h].load(), handed_out) << "block " << h;
  }
}

// A popped block whose link reads handed_out was on the stack while marked as handed out: the
// stack is corrupt, and level 2 stops there instead of putting handed_out in the head.
TEST(TaggedStack, PopOfABlockMarkedHandedOutIsCaughtAtLevelTwo) {
  if constexpr (MEMKIT_DEBUG < 2) {
    GTEST_SKIP() << "the check is MEMKIT_ASSERT_INTERNAL, MEMKIT_DEBUG >= 2";
  }
  EXPECT_DEATH(
      {
        link_table l(2);
        tagged_stack s;
        s.push(2, 2, l.links());
        s.push(1, 1, l.links());
        l[1] = handed_out; // as if block 1 were handed out while still on the stack
        s.pop(l.links());
      },
      "memkit: assertion failed");
}

// A link whose load, once armed, runs `between` right after reading: what another thread could do
// between a popper's read of the top's link and its compare-and-swap, made deterministic.
class interposing_link : public std::atomic<block_handle> {
public:
  block_handle load(std::memory_order order) const noexcept {
    const block_handle value = std::atomic<block_handle>::load(order);
    if (between) {
      std::exchange(between, nullptr)();
    }
    return value;
  }
  mutable std::function<void()> between;
};

// The ABA case the tag exists for: a popper reads top A and A's link B; meanwhile A and B are
// popped and A pushed back. The head is A again, but B is in use: a compare-and-swap on the
// handle alone would install B as the top. The tag makes it fail, and the retry pops A correctly.
TEST(TaggedStack, PopperThatSawATopPoppedAndPushedBackRetriesInsteadOfReinstallingItsStaleLink) {
  std::vector<interposing_link> l(4);
  const auto links = [&](block_handle h) -> interposing_link& { return l[h]; };
  constexpr block_handle a = 1;
  constexpr block_handle b = 2;
  constexpr block_handle c = 3;
  tagged_stack s;
  s.push(c, c, links);
  s.push(b, b, links);
  s.push(a, a, links);

  std::vector<block_handle> meanwhile;
  l[a].between = [&] {
    meanwhile.push_back(s.pop(links));
    meanwhile.push_back(s.pop(links));
    s.push(meanwhile.front(), meanwhile.front(), links);
  };
  const block_handle popped = s.pop(links);
  ASSERT_FALSE(l[a].between) << "pop did not read the link through the callable's result; this "
                                "test needs it to, to run between the read and the swap";
  EXPECT_EQ(meanwhile, (std::vector<block_handle>{a, b}));
  EXPECT_EQ(popped, a);
  EXPECT_EQ(s.top(), c) << "block " << b << " is in use and must not be on the stack";
  EXPECT_EQ(s.pop(links), c);
  EXPECT_EQ(s.pop(links), no_block);
}

// What one stress run does: `threads` threads, each `operations` times popping (alone or in
// bursts) or pushing back what it holds (one handle, or several as a chain), over `handles`
// handles, fewer than the threads can hold together, so that a pop may find the stack empty.
struct stress_options {
  unsigned threads = 4;
  std::size_t operations = 50'000; // per thread
  std::size_t handles = 24;
  std::size_t max_held = 8;
  unsigned chain_percent = 0; // of the pushes, those that push everything held as one chain
  std::uint64_t seed = 0;
};

struct stress_counts {
  std::atomic<std::size_t> pops{0};
  std::atomic<std::size_t> chains{0};
  std::atomic<std::size_t> errors{0};
};

// Each handle has an owner flag (0: free, else the holding thread + 1), swapped on pop and on push,
// relaxed so that it orders nothing: the exchange on pop must find the handle free, which fails if
// the stack hands one block to two threads. A plain stamp written while the handle is held and
// checked before it goes back relies on the stack's own release and acquire alone: a wrong memory
// order there is a data race ThreadSanitizer reports. The links follow concurrent_pool: handed_out
// while held, claimed on the way back.
class stress_run {
public:
  explicit stress_run(const stress_options& o)
      : o_(o), links_(o.handles), owner_(o.handles + 1), stamp_(o.handles + 1) {}

  void run() {
    for (block_handle h = 1; h <= o_.handles; ++h) {
      stack_.push(h, h, links_.links());
    }
    run_threads(o_.threads, [this](unsigned t) { work(t); });
  }

  const stress_counts& counts() const noexcept { return counts_; }
  const std::vector<std::string>& first_errors() const noexcept { return first_errors_; }

  // \returns what is wrong with the stack at quiescence: each handle on it exactly once, every
  // owner flag free. Empty if nothing.
  std::string check_quiescent() const {
    const std::vector<block_handle> free = links_.walk(stack_);
    std::vector<int> seen(o_.handles + 1, 0);
    for (block_handle h : free) {
      if (h == no_block || h > o_.handles) {
        return "the stack holds " + std::to_string(h) + ", not a handle";
      }
      if (++seen[h] > 1) {
        return "handle " + std::to_string(h) + " is on the stack twice";
      }
      if (owner_[h].load() != 0) {
        return "handle " + std::to_string(h) + " is on the stack and owned";
      }
    }
    if (free.size() != o_.handles) {
      return std::to_string(free.size()) + " handles on the stack, not " +
             std::to_string(o_.handles);
    }
    return {};
  }

private:
  void work(unsigned t) {
    std::mt19937_64 rng(o_.seed + t);
    std::vector<std::pair<block_handle, std::uint64_t>> held;
    std::uint64_t sequence = 0;
    for (std::size_t op = 0; op < o_.operations; ++op) {
      if (held.empty() || (held.size() < o_.max_held && rng() % 2 == 0)) {
        const std::size_t burst = 1 + rng() % (o_.max_held - held.size());
        for (std::size_t k = 0; k < burst; ++k) {
          const block_handle h = stack_.pop(links_.links());
          if (h == no_block) {
            break;
          }
          counts_.pops.fetch_add(1, std::memory_order_relaxed);
          const std::uint64_t stamp = (std::uint64_t{t + 1} << 48) | ++sequence;
          take(t, h, stamp);
          held.emplace_back(h, stamp);
        }
      } else if (held.size() > 1 && rng() % 100 < o_.chain_percent) {
        give_back_chain(t, held);
        held.clear();
      } else {
        const std::size_t k = rng() % held.size();
        if (give_back(t, held[k].first, held[k].second)) {
          stack_.push(held[k].first, held[k].first, links_.links());
        }
        held[k] = held.back();
        held.pop_back();
      }
    }
    if (!held.empty()) {
      give_back_chain(t, held);
    }
  }

  void take(unsigned t, block_handle h, std::uint64_t stamp) {
    const unsigned previous = owner_[h].exchange(t + 1, std::memory_order_relaxed);
    if (previous != 0) {
      error("thread " + std::to_string(t) + " popped handle " + std::to_string(h) +
            " held by thread " + std::to_string(previous - 1));
    }
    links_[h].store(handed_out, std::memory_order_relaxed);
    stamp_[h] = stamp;
  }

  // \returns whether `h` may go back on the stack: its claim succeeded.
  bool give_back(unsigned t, block_handle h, std::uint64_t stamp) {
    if (stamp_[h] != stamp) {
      error("handle " + std::to_string(h) + " stamped " + std::to_string(stamp) +
            " was overwritten while thread " + std::to_string(t) + " held it");
    }
    if (!claim(links_[h])) {
      error("the claim of held handle " + std::to_string(h) + " failed");
      return false;
    }
    const unsigned previous = owner_[h].exchange(0, std::memory_order_relaxed);
    if (previous != t + 1) {
      error("thread " + std::to_string(t) + " released handle " + std::to_string(h) + " owned by " +
            std::to_string(previous) + " (0 free, else thread + 1)");
    }
    return true;
  }

  void give_back_chain(unsigned t,
                       const std::vector<std::pair<block_handle, std::uint64_t>>& held) {
    block_handle first = no_block;
    block_handle last = no_block;
    for (const auto& [h, stamp] : held) {
      if (!give_back(t, h, stamp)) {
        continue;
      }
      if (first == no_block) {
        last = h;
      } else {
        links_[h].store(first, std::memory_order_relaxed);
      }
      first = h;
    }
    if (first != no_block) {
      stack_.push(first, last, links_.links());
      counts_.chains.fetch_add(first != last ? 1 : 0, std::memory_order_relaxed);
    }
  }

  void error(std::string what) {
    if (counts_.errors.fetch_add(1) < 4) {
      const std::lock_guard<std::mutex> lock(errors_mutex_);
      first_errors_.push_back(std::move(what));
    }
  }

  const stress_options o_;
  tagged_stack stack_;
  link_table links_;
  std::vector<std::atomic<unsigned>> owner_;
  std::vector<std::uint64_t> stamp_; // plain: written and read only by the holder
  stress_counts counts_;
  std::mutex errors_mutex_;
  std::vector<std::string> first_errors_;
};

void expect_clean_run(const stress_options& o, std::size_t min_chains) {
  stress_run r(o);
  r.run();
  EXPECT_EQ(r.counts().errors.load(), 0u)
      << "seed " << o.seed << ": " << (r.first_errors().empty() ? "" : r.first_errors().front());
  EXPECT_EQ(r.check_quiescent(), "") << "seed " << o.seed;
  EXPECT_GT(r.counts().pops.load(), o.threads * o.operations / 2) << "seed " << o.seed;
  EXPECT_GE(r.counts().chains.load(), min_chains) << "seed " << o.seed;
}

TEST(TaggedStack, ThreadsPoppingAndPushingSingleHandlesNeverShareOne) {
  stress_options o;
  o.seed = seed;
  expect_clean_run(o, 0);
}

TEST(TaggedStack, ThreadsPushingChainsNeverShareAHandle) {
  stress_options o;
  o.seed = seed + 100;
  o.chain_percent = 50;
  expect_clean_run(o, o.threads * o.operations / 20);
}

// Two threads free the same handed-out blocks at once, as racing double frees would: the claim
// lets exactly one of them push each block, and the stack ends with every block once.
TEST(TaggedStack, RacingFreesOfOneBlockPushItOnce) {
  constexpr std::size_t n = 2000;
  constexpr int rounds = 10;
  link_table l(n);
  tagged_stack s;
  for (block_handle h = 1; h <= n; ++h) {
    s.push(h, h, l.links());
  }
  std::mt19937_64 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    std::vector<block_handle> order;
    for (block_handle h = s.pop(l.links()); h != no_block; h = s.pop(l.links())) {
      l[h].store(handed_out, std::memory_order_relaxed);
      order.push_back(h);
    }
    ASSERT_EQ(order.size(), n) << "round " << round;
    std::vector<std::atomic<unsigned>> wins(n + 1);
    std::vector<std::vector<block_handle>> orders{order, order};
    std::shuffle(orders[1].begin(), orders[1].end(), rng);
    run_threads(2, [&](unsigned t) {
      for (block_handle h : orders[t]) {
        if (claim(l[h])) {
          wins[h].fetch_add(1, std::memory_order_relaxed);
          s.push(h, h, l.links());
        }
      }
    });
    for (block_handle h = 1; h <= n; ++h) {
      ASSERT_EQ(wins[h].load(), 1u) << "block " << h << ", round " << round << ", seed " << seed;
    }
    std::vector<block_handle> free = l.walk(s);
    ASSERT_EQ(free.size(), n) << "round " << round << ", seed " << seed;
    std::sort(free.begin(), free.end());
    EXPECT_EQ(std::adjacent_find(free.begin(), free.end()), free.end())
        << "a block is on the stack twice; round " << round << ", seed " << seed;
  }
}

} // namespace
