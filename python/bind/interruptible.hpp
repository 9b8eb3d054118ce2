// Long C++ calls from Python: run without the GIL, reporting progress to a Python callable, and
// stopped by Ctrl-C within a wait slice whatever thread does the work.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

#include "weightloader/source.hpp"

namespace wl::py {

// Python runs signal handlers on the main thread only, so the engine's workers never see Ctrl-C.
// run(work) therefore does `work` (C++ only: it takes the GIL itself when it calls back into
// Python) on a helper thread while the calling thread, holding the GIL between 20 ms waits, calls
// PyErr_CheckSignals(). When a handler raises (KeyboardInterrupt), the call is cancelled: progress()
// returns false to the engine and cancelled() turns true; the work is joined (nothing keeps
// running), its result or error dropped, and the handler's exception raised. An exception from the
// progress callable cancels the same way and is raised instead of the work's. One object may run
// several calls, one at a time (an LLM's loads and generations): each run() starts uncancelled.
class Interruptible {
 public:
  explicit Interruptible(pybind11::object progress = pybind11::none());

  // For IoOptions::progress: false once cancelled; otherwise true, after calling the Python
  // callable (if any) with (done, total) at most ~10 times a second (False from it cancels).
  ProgressCallback progress() const;
  // For work that reports no progress (generation, between tokens): true once cancelled.
  bool cancelled() const;

  template <class F>
  std::invoke_result_t<F&> run(F&& work) {
    using R = std::invoke_result_t<F&>;
    if constexpr (std::is_void_v<R>) {
      run_erased(work);
    } else {
      std::optional<R> out;
      run_erased([&] { out.emplace(work()); });
      return std::move(*out);
    }
  }

 private:
  struct State;
  void run_erased(const std::function<void()>& work);
  std::shared_ptr<State> state_;
};

}  // namespace wl::py
