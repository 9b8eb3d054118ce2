// Copies out of file mappings that survive the file shrinking underneath: a fault past the file's
// end raises SIGBUS, which a guarded call turns into a `false` return instead of a crash.
#pragma once

namespace wl {

// Installs the process-wide SIGBUS handler that guarded calls need (once; later calls do nothing).
// Whoever copies out of file mappings calls it first (the I/O engine in mmap mode). Faults
// outside a guarded call go to the handler that was there before (or kill the process as SIGBUS
// does by default).
void install_sigbus_handler();

// Runs fn(ctx) on this thread and returns true, or returns false if it touched a mapped page past
// the end of its file (only once install_sigbus_handler() has run; before, such a fault kills the
// process). fn must own nothing that needs a destructor (plain copies, conversions and decoding),
// since a fault abandons its frames.
bool guarded_call(void (*fn)(void*), void* ctx);

template <typename Fn>
bool guarded(Fn&& fn) {
  return guarded_call([](void* f) { (*static_cast<Fn*>(f))(); }, &fn);
}

}  // namespace wl
