#include "engine/thread_pool.hpp"

#include <algorithm>

namespace wl {

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

size_t ThreadPool::drain(const std::function<void(size_t)>& task, size_t count) {
  size_t ran = 0;
  for (size_t i = next_.fetch_add(1); i < count; i = next_.fetch_add(1)) {
    task(i);
    ++ran;
  }
  return ran;
}

void ThreadPool::run(size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  {
    // A worker still leaving the previous step must not take an index of this one.
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return active_ == 0; });
    task_ = &task;
    count_ = n;
    finished_ = 0;
    next_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  const size_t ran = drain(task, n);
  std::unique_lock lock(mutex_);
  finished_ += ran;
  done_.wait(lock, [&] { return finished_ == count_ && active_ == 0; });
  task_ = nullptr;
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* task = nullptr;
    size_t count = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!task_) continue;  // the step ended before this worker woke
      task = task_;
      count = count_;
      ++active_;
    }
    const size_t ran = drain(*task, count);
    {
      std::lock_guard lock(mutex_);
      finished_ += ran;
      --active_;
    }
    done_.notify_all();
  }
}

}  // namespace wl
