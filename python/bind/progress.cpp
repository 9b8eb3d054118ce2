#include <atomic>
#include <chrono>
#include <mutex>

#include "bind/bindings.hpp"

namespace wl::py {

struct ProgressBridge::State {
  pybind11::object callback;
  std::mutex mutex;
  std::chrono::steady_clock::time_point last{};
  std::atomic<bool> interrupted{false};
};

ProgressBridge::ProgressBridge(pybind11::object callback) : state_(std::make_shared<State>()) {
  state_->callback = std::move(callback);
}

ProgressCallback ProgressBridge::callback() {
  std::shared_ptr<State> s = state_;
  return [s](uint64_t done, uint64_t total) {
    std::lock_guard lock(s->mutex);
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - s->last < std::chrono::milliseconds(100)) return true;
    s->last = now;
    pybind11::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {  // Ctrl-C: the handler raised KeyboardInterrupt
      PyErr_Clear();
      s->interrupted = true;
      return false;
    }
    if (!s->callback.is_none()) {
      try {
        const pybind11::object keep_going = s->callback(done, total);
        if (!keep_going.is_none() && !keep_going.cast<bool>()) return false;
      } catch (pybind11::error_already_set& e) {
        if (e.matches(PyExc_KeyboardInterrupt)) s->interrupted = true;
        return false;  // an exception in the callback cancels the load
      }
    }
    return true;
  };
}

void ProgressBridge::rethrow_interrupt() const {
  if (!state_->interrupted) return;
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw pybind11::error_already_set();
}

}  // namespace wl::py
