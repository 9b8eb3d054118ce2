// The engine's compute pool: every task of every step runs exactly once, steps never overlap.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "engine/thread_pool.hpp"

namespace wl {
namespace {

TEST(ThreadPool, EveryTaskOfEveryStepRunsOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4u);
  std::vector<std::atomic<int>> hits(97);
  for (int step = 0; step < 500; ++step) {
    const size_t n = 1 + size_t(step) % hits.size();
    pool.run(n, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < hits.size(); ++i) {
      ASSERT_EQ(hits[i].load(), i < n ? 1 : 0) << "step " << step << " task " << i;
      hits[i] = 0;
    }
  }
}

TEST(ThreadPool, OneThreadRunsInline) {
  ThreadPool pool(1);
  int sum = 0;  // no synchronisation needed: the caller runs every task
  pool.run(10, [&](size_t i) { sum += int(i); });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace wl
