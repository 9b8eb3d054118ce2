#include "core/sigbus_guard.hpp"

#include <csetjmp>
#include <csignal>
#include <mutex>

namespace wl {

namespace {

thread_local sigjmp_buf* t_jump = nullptr;  // set while this thread runs a guarded call
struct sigaction g_previous {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  if (sigjmp_buf* jump = t_jump) {
    t_jump = nullptr;
    siglongjmp(*jump, 1);
  }
  // Not ours: hand it on as if we had never been installed.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    // Default action (SIGBUS cannot usefully be ignored): re-raised, it is delivered once this
    // handler returns, and a real fault would recur on the same instruction anyway.
    ::signal(SIGBUS, SIG_DFL);
    ::raise(sig);
  }
}

}  // namespace

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous);
  });
}

bool guarded_call(void (*fn)(void*), void* ctx) {
  sigjmp_buf jump;
  // savemask = 1: leaving the handler by siglongjmp must unblock SIGBUS again for this thread.
  if (sigsetjmp(jump, 1) != 0) return false;
  t_jump = &jump;
  fn(ctx);
  t_jump = nullptr;
  return true;
}

}  // namespace wl
