// The ranks of one process: collectives in rank order, strings of any length, and abort() waking
// the ranks that wait for one that failed.
#include <gtest/gtest.h>

#include <thread>

#include "test_util.hpp"
#include "weightloader/communicator.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// Runs body(rank's communicator) on one thread per rank.
template <class F>
void on_every_rank(std::vector<std::unique_ptr<Communicator>>& group, F&& body) {
  std::vector<std::thread> threads;
  for (auto& comm : group) threads.emplace_back([&, c = comm.get()] { body(*c); });
  for (std::thread& t : threads) t.join();
}

TEST(InProcessCommunicator, CollectivesCombineInRankOrder) {
  auto group = in_process_group(3);
  std::vector<std::vector<float>> sums(3);
  std::vector<std::vector<std::string>> strings(3);
  std::vector<int> broadcast(3);
  on_every_rank(group, [&](Communicator& c) {
    const unsigned r = c.rank();
    // 1e8 + 1 - 1e8 in float depends on the order: rank order gives (1e8 + 1) + -1e8 = 0.
    std::vector<float> v{r == 0 ? 1e8f : r == 1 ? 1.0f : -1e8f, float(r)};
    c.all_reduce_sum(v.data(), v.size());
    sums[r] = v;
    strings[r] = all_gather_strings(c, std::string(r * 3, char('a' + r)));
    int value = r == 2 ? 42 : 0;
    c.broadcast(&value, sizeof value, 2);
    broadcast[r] = value;
    c.barrier();
  });
  for (unsigned r = 0; r < 3; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{0.0f, 3.0f})) << r;
    EXPECT_EQ(strings[r], (std::vector<std::string>{"", "bbb", "cccccc"})) << r;
    EXPECT_EQ(broadcast[r], 42) << r;
  }
}

TEST(InProcessCommunicator, AbortStopsTheRanksWaitingForTheFailedOne) {
  auto group = in_process_group(3);
  std::vector<std::string> errors(3);
  on_every_rank(group, [&](Communicator& c) {
    try {
      if (c.rank() == 1) throw Error(ErrorCode::Io, "disk gone");
      float x = 1;
      c.all_reduce_sum(&x, 1);
    } catch (const Error& e) {
      errors[c.rank()] = e.what();
      if (c.rank() == 1) c.abort(e.what());
    }
  });
  for (unsigned r : {0u, 2u}) {
    EXPECT_NE(errors[r].find("rank " + std::to_string(r) + " of 3 stopped: rank 1 of 3 failed: disk gone"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("[RankFailed]"), std::string::npos) << errors[r];
  }
}

}  // namespace
}  // namespace wl
