#include "bind/interruptible.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "weightloader/error.hpp"

namespace wl::py {

namespace {

constexpr auto kSignalSlice = std::chrono::milliseconds(20);    // how long Ctrl-C may wait to be seen
constexpr auto kProgressEvery = std::chrono::milliseconds(100);  // how often the Python callable is called

}  // namespace

struct Interruptible::State {
  explicit State(pybind11::object callable) : callable(std::move(callable)) {}
  ~State() {
    pybind11::gil_scoped_acquire gil;  // the last holder may be a thread without the GIL
    callable = pybind11::object();
    raised.reset();
  }

  pybind11::object callable;  // None: no progress reported
  std::atomic<bool> cancelled{false};
  std::mutex mutex;  // serialises calls of `callable`; guards `last` and `raised`
  std::chrono::steady_clock::time_point last{};
  std::optional<pybind11::error_already_set> raised;  // by `callable`
};

Interruptible::Interruptible(pybind11::object progress) : state_(std::make_shared<State>(std::move(progress))) {}

ProgressCallback Interruptible::progress() const {
  std::shared_ptr<State> s = state_;
  return [s](uint64_t done, uint64_t total) {
    if (s->cancelled) return false;
    if (s->callable.is_none()) return true;
    std::lock_guard lock(s->mutex);
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - s->last < kProgressEvery) return true;
    s->last = now;
    pybind11::gil_scoped_acquire gil;
    try {
      const pybind11::object keep_going = s->callable(done, total);
      return keep_going.is_none() || keep_going.cast<bool>();
    } catch (pybind11::error_already_set& e) {
      if (!s->raised) s->raised = std::move(e);
      s->cancelled = true;
      return false;
    }
  };
}

bool Interruptible::cancelled() const {
  return state_->cancelled;
}

void Interruptible::run_erased(const std::function<void()>& work) {
  State& s = *state_;
  s.cancelled = false;
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::exception_ptr error;
  std::thread helper([&] {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex);
    finished = true;
    finished_cv.notify_one();
  });
  std::optional<pybind11::error_already_set> signalled;  // what a signal handler raised
  for (;;) {
    {
      pybind11::gil_scoped_release nogil;
      std::unique_lock lock(mutex);
      if (finished_cv.wait_for(lock, kSignalSlice, [&] { return finished; })) break;
    }
    if (!signalled && PyErr_CheckSignals() != 0) {
      signalled.emplace();  // fetches the handler's exception
      s.cancelled = true;
    }
  }
  helper.join();
  if (signalled) throw std::move(*signalled);
  std::optional<pybind11::error_already_set> raised;
  {
    std::lock_guard lock(s.mutex);
    raised.swap(s.raised);
  }
  if (raised) throw std::move(*raised);
  if (error) std::rethrow_exception(error);
}

}  // namespace wl::py
