// SPDX-License-Identifier: BSL-1.0
// apps/memkit-bench/replay/synthetic.cpp: the synthetic trace's generator.

#include "replay/synthetic.hpp"

#include <algorithm>
#include <deque>
#include <random>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace memkit::bench::replay {
namespace {

struct block {
  std::uint64_t ptr = 0;
  std::uint32_t site = 0;
};

class generator {
public:
  generator(const synthetic_options& o, const event_sink& sink)
      : o_(o), sink_(sink), rng_(o.seed), threads_(std::max<std::uint32_t>(o.threads, 1)) {}

  void run() {
    for (int i = 0; i < 8; ++i) {
      long_lived_.push_back(alloc(0, long_lived_site, std::size_t{1} << 20));
    }
    while (events_ < o_.events) {
      // Each thread runs a random number of steps, as a scheduler would interleave them.
      const auto t = static_cast<std::uint32_t>(pick(threads_.size()));
      for (std::uint64_t n = 1 + pick(16); n > 0; --n) {
        step(t);
      }
    }
    for (std::uint32_t t = 0; t < threads_.size(); ++t) {
      drain(t);
    }
    for (const block& b : long_lived_) {
      release(0, b);
    }
  }

private:
  struct thread_state {
    std::vector<block> lifo;
    std::vector<block> bulk;
    bool bulk_dying = false;
    std::vector<block> churn;
    std::deque<block> inbox; ///< messages other threads sent, this one frees
  };

  std::uint64_t pick(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }
  std::uint64_t size_in(std::uint64_t lo, std::uint64_t hi) { return lo + pick(hi - lo + 1); }

  void put(const event& e) {
    ++events_;
    sink_(e);
  }

  block alloc(std::uint32_t t, std::uint32_t site, std::uint64_t size) {
    std::uint64_t ptr = 0;
    if (!free_addresses_.empty()) {
      ptr = free_addresses_.back();
      free_addresses_.pop_back();
    } else {
      ptr = next_address_ += 0x1000;
    }
    event e;
    e.kind = event_kind::alloc;
    e.thread = t;
    e.time = ++time_;
    e.result = ptr;
    e.size = size;
    e.site = site;
    put(e);
    return {ptr, site};
  }

  void release(std::uint32_t t, const block& b) {
    event e;
    e.kind = event_kind::free;
    e.thread = t;
    e.time = ++time_;
    e.ptr = b.ptr;
    put(e);
    free_addresses_.push_back(b.ptr);
  }

  void step(std::uint32_t t) {
    thread_state& s = threads_[t];
    const std::uint64_t action = pick(100);
    if (action < 30) {
      if (s.lifo.empty() || (s.lifo.size() < 32 && pick(2) == 0)) {
        s.lifo.push_back(alloc(t, lifo_site + t, size_in(16, 256)));
      } else {
        release(t, s.lifo.back());
        s.lifo.pop_back();
      }
    } else if (action < 60) {
      if (!s.bulk_dying) {
        s.bulk.push_back(alloc(t, bulk_site + t, size_in(32, 128)));
        if (s.bulk.size() == 64) {
          s.bulk_dying = true;
          std::shuffle(s.bulk.begin(), s.bulk.end(), rng_);
        }
      } else {
        release(t, s.bulk.back());
        s.bulk.pop_back();
        s.bulk_dying = !s.bulk.empty();
      }
    } else if (action < 85) {
      if (s.churn.size() < 256 && (s.churn.empty() || pick(2) == 0)) {
        s.churn.push_back(alloc(t, churn_site + t, size_in(8, 4096)));
      } else {
        const std::size_t i = pick(s.churn.size());
        release(t, s.churn[i]);
        s.churn[i] = s.churn.back();
        s.churn.pop_back();
      }
    } else if (action < 95) {
      threads_[(t + 1) % threads_.size()].inbox.push_back(alloc(t, handoff_site, 64));
    } else if (!s.inbox.empty()) {
      release(t, s.inbox.front());
      s.inbox.pop_front();
    }
  }

  void drain(std::uint32_t t) {
    thread_state& s = threads_[t];
    for (auto* v : {&s.lifo, &s.bulk, &s.churn}) {
      while (!v->empty()) {
        release(t, v->back());
        v->pop_back();
      }
    }
    for (const block& b : s.inbox) {
      release(t, b);
    }
    s.inbox.clear();
  }

  synthetic_options o_;
  const event_sink& sink_;
  std::mt19937_64 rng_;
  std::vector<thread_state> threads_;
  std::vector<block> long_lived_;
  std::vector<std::uint64_t> free_addresses_;
  std::uint64_t next_address_ = 0x10000;
  std::uint64_t time_ = 0;
  std::uint64_t events_ = 0; ///< given to the sink so far
};

} // namespace

void generate_synthetic(const synthetic_options& o, const event_sink& sink) {
  generator(o, sink).run();
}

event_list synthetic_trace(const synthetic_options& o) {
  event_list events;
  generate_synthetic(o, [&events](const event& e) { events.push_back(e); });
  return events;
}

std::optional<synthetic_options> parse_synthetic(const std::string& name) {
  const std::string prefix = "synthetic:";
  if (name.rfind(prefix, 0) != 0) {
    return std::nullopt;
  }
  synthetic_options o;
  std::istringstream in(name.substr(prefix.size()));
  std::vector<std::uint64_t> numbers;
  for (std::string part; std::getline(in, part, ':');) {
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size()) {
      throw std::invalid_argument("bad synthetic trace '" + name +
                                  "': want synthetic:EVENTS[:THREADS[:SEED]]");
    }
    numbers.push_back(v);
  }
  if (numbers.empty() || numbers.size() > 3 || (numbers.size() > 1 && numbers[1] == 0) ||
      (numbers.size() > 1 && numbers[1] > 1024)) {
    throw std::invalid_argument("bad synthetic trace '" + name +
                                "': want synthetic:EVENTS[:THREADS[:SEED]], 1 to 1024 threads");
  }
  o.events = numbers[0];
  if (numbers.size() > 1) {
    o.threads = static_cast<std::uint32_t>(numbers[1]);
  }
  if (numbers.size() > 2) {
    o.seed = numbers[2];
  }
  return o;
}

} // namespace memkit::bench::replay
