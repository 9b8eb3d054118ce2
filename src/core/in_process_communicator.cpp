// The ranks of one process, each on its own thread, meeting at a shared rendezvous: every
// collective publishes each rank's buffer, waits for all of them, reads what it needs, and waits
// again before anyone may reuse a buffer. abort() wakes every waiting rank with an error.
#include <condition_variable>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "weightloader/communicator.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

class Rendezvous {
 public:
  explicit Rendezvous(unsigned size) : size_(size), slots_(size) {}
  unsigned size() const { return size_; }

  // Publishes rank's buffer and waits until every rank has published.
  void arrive(unsigned rank, const void* buffer) {
    slots_[rank] = buffer;
    wait(rank);
  }
  const void* slot(unsigned rank) const { return slots_[rank]; }

  // Waits until every rank has called wait() as often as this one.
  void wait(unsigned rank) {
    std::unique_lock lock(mutex_);
    throw_if_aborted(rank);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || !why_.empty(); });
    if (generation_ == generation) throw_if_aborted(rank);
  }

  void abort(unsigned rank, const std::string& why) {
    std::lock_guard lock(mutex_);
    if (why_.empty()) why_ = fmt::format("rank {} of {} failed: {}", rank, size_, why);
    changed_.notify_all();
  }

  // Only while no rank waits: ranks that threw mid-collective had already counted themselves.
  void recover() {
    std::lock_guard lock(mutex_);
    why_.clear();
    arrived_ = 0;
  }

 private:
  void throw_if_aborted(unsigned rank) const {
    if (!why_.empty()) throw Error(ErrorCode::RankFailed, fmt::format("rank {} of {} stopped: {}", rank, size_, why_));
  }

  const unsigned size_;
  std::vector<const void*> slots_;  // each rank's buffer in the current collective
  std::mutex mutex_;
  std::condition_variable changed_;
  unsigned arrived_ = 0;
  uint64_t generation_ = 0;
  std::string why_;  // set by abort()
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Rendezvous> group, unsigned rank) : group_(std::move(group)), rank_(rank) {}
  unsigned rank() const override { return rank_; }
  unsigned size() const override { return group_->size(); }

  void all_reduce_sum(float* data, size_t n) override {
    group_->arrive(rank_, data);
    sum_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      float s = static_cast<const float*>(group_->slot(0))[i];
      for (unsigned r = 1; r < size(); ++r) s += static_cast<const float*>(group_->slot(r))[i];
      sum_[i] = s;
    }
    group_->wait(rank_);  // nobody reads `data` any more
    std::memcpy(data, sum_.data(), n * sizeof(float));
  }
  void all_gather(const void* in, size_t bytes, void* out) override {
    group_->arrive(rank_, in);
    for (unsigned r = 0; r < size(); ++r) std::memcpy(static_cast<std::byte*>(out) + r * bytes, group_->slot(r), bytes);
    group_->wait(rank_);
  }
  void broadcast(void* data, size_t bytes, unsigned root) override {
    group_->arrive(rank_, data);
    if (rank_ != root) std::memcpy(data, group_->slot(root), bytes);
    group_->wait(rank_);
  }
  void barrier() override { group_->wait(rank_); }
  void abort(const std::string& why) override { group_->abort(rank_, why); }
  void recover() override { group_->recover(); }

 private:
  std::shared_ptr<Rendezvous> group_;
  const unsigned rank_;
  std::vector<float> sum_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> in_process_group(unsigned size) {
  if (size == 0) throw Error(ErrorCode::InvalidArgument, "a group needs at least one rank");
  auto group = std::make_shared<Rendezvous>(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (unsigned r = 0; r < size; ++r) out.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return out;
}

}  // namespace wl
