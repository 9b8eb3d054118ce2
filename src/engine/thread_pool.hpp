// A fixed set of compute threads that run the tasks of one parallel step at a time; the calling
// thread works too. Used by the engine for matrix-vector products and attention heads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wl {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads);  // 0 = one per core
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const noexcept { return unsigned(workers_.size()) + 1; }
  // Runs task(i) for every i in [0, n) and returns when all are done. Tasks must not throw.
  void run(size_t n, const std::function<void(size_t)>& task);

 private:
  void work();
  // Runs tasks of the current step until none is left; returns how many it ran.
  size_t drain(const std::function<void(size_t)>& task, size_t count);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  size_t finished_ = 0;     // tasks completed in the current step (under mutex_)
  unsigned active_ = 0;     // workers inside a step; a new step waits for none (under mutex_)
  uint64_t generation_ = 0; // bumped for every step
  bool stop_ = false;
};

}  // namespace wl
