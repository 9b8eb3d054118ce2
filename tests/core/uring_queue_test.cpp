// A reader thread's io_uring: reads queued together complete tagged, in any order; a kernel that
// refuses io_uring (seccomp's EPERM, an old kernel's ENOSYS) is an Io error naming the file and the
// errno, never a crash.
#include "core/uring_queue.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "support/refused_io_uring.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

TEST(UringQueue, ReadsQueuedTogetherCompleteTaggedWithTheirBytes) {
  if (!test::io_uring_allowed()) GTEST_SKIP() << "io_uring is refused in this process";
  test::TempDir dir;
  const std::string path = dir.file("f.bin");
  std::string bytes;
  for (int i = 0; i < 4; ++i) bytes += std::string(1000, char('a' + i));
  test::write_bytes(path, bytes);
  const int fd = ::open(path.c_str(), O_RDONLY);
  UringQueue queue(4, path);
  EXPECT_EQ(queue.depth(), 4u);
  std::vector<std::string> got(4, std::string(1000, '\0'));
  for (uint64_t i = 0; i < 4; ++i) queue.queue_read(fd, i * 1000, got[i].data(), 1000, 10 + i);
  std::set<uint64_t> tags;
  for (int i = 0; i < 4; ++i) {
    const UringQueue::Completion c = queue.wait(path);
    EXPECT_EQ(c.result, 1000);
    tags.insert(c.tag);
  }
  EXPECT_EQ(tags, (std::set<uint64_t>{10, 11, 12, 13}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], std::string(1000, char('a' + i)));
  // Past the end: 0 bytes; a descriptor not open: -EBADF.
  queue.queue_read(fd, 4000, got[0].data(), 1000, 1);
  EXPECT_EQ(queue.wait(path).result, 0);
  queue.queue_read(-1, 0, got[0].data(), 1000, 2);
  EXPECT_EQ(queue.wait(path).result, -EBADF);
  ::close(fd);
}

// Death tests in their own process ("threadsafe" re-runs the binary): a seccomp filter cannot be undone.
TEST(UringQueueDeathTest, ARefusedRingIsAnIoErrorNamingTheFileAndTheErrno) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const int err : {EPERM, ENOSYS}) {
    EXPECT_EXIT(
        {
          if (!test::refuse_io_uring(err)) std::_Exit(2);
          if (uring_refusal() != err) std::_Exit(3);
          try {
            UringQueue queue(8, "/models/m.safetensors");
          } catch (const Error& e) {
            const std::string what = e.what();
            const bool named = e.code() == ErrorCode::Io && e.os_errno() == err && e.file() == "/models/m.safetensors" &&
                               what.find(std::strerror(err)) != std::string::npos && what.find("io=direct") != std::string::npos;
            std::_Exit(named ? 0 : 4);
          }
          std::_Exit(5);
        },
        ::testing::ExitedWithCode(0), "")
        << std::strerror(err);
  }
}

}  // namespace
}  // namespace wl
