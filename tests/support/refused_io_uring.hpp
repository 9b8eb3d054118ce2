// io_uring refused as a container's seccomp profile refuses it, for the tests of io=uring's errors
// and of io=auto passing it by: run inside a death test's child process, since it cannot be undone.
#pragma once

namespace wl::test {

// From now on io_uring_setup(2) fails with `err` (EPERM, ENOSYS) in this process and its children
// (a seccomp filter); false if the kernel refused the filter.
bool refuse_io_uring(int err);

// Whether this process may make an io_uring (the tests of io=uring's reads skip where it may not).
bool io_uring_allowed();

}  // namespace wl::test
