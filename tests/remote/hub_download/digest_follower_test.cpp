// The hub downloader's digest follower: hashes a file while other threads still write it, as far
// as its written prefix reaches, whatever order the writers report in.
#include "remote/hub_download/digest_follower.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "test_util.hpp"

namespace wl::remote {
namespace {

struct OpenFile {
  explicit OpenFile(const std::string& path) : fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644)) {}
  ~OpenFile() { ::close(fd); }
  int fd;
};

std::string random_bytes(size_t n) {
  std::mt19937 rng(7);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string digest_of(const std::string& bytes, DigestKind kind) {
  return content_digest(*memory_source("f", MemoryRegion::of_string(bytes)), kind);
}

TEST(DigestFollower, HashesWhatTwoWritersWriteOutOfOrder) {
  test::TempDir dir;
  const std::string bytes = random_bytes((20u << 20) + 12345);  // several steps and a tail
  for (DigestKind kind : {DigestKind::Sha256, DigestKind::GitBlobSha1}) {
    OpenFile file(dir.file("partial"));
    DigestFollower follower(file.fd, dir.file("partial"), kind, bytes.size());
    const size_t half = bytes.size() / 2;
    // The second half is written first: nothing past the gap may be hashed until the first half
    // arrives, and the writers report their prefixes in any order.
    std::thread second([&] {
      for (size_t at = half; at < bytes.size(); at += 1 << 20)
        ASSERT_GT(::pwrite(file.fd, bytes.data() + at, std::min<size_t>(1 << 20, bytes.size() - at), at), 0);
      follower.advance(0);
    });
    second.join();
    std::thread first([&] {
      for (size_t at = 0; at < half; at += 777777) {
        const size_t n = std::min<size_t>(777777, half - at);
        ASSERT_EQ(::pwrite(file.fd, bytes.data() + at, n, at), static_cast<ssize_t>(n));
        follower.advance(at + n);
      }
      follower.advance(bytes.size());
      follower.advance(half);  // late and smaller: ignored
    });
    first.join();
    EXPECT_EQ(follower.finish(), digest_of(bytes, kind));
  }
}

TEST(DigestFollower, WithoutAKindItOnlyWaitsAndAnEmptyFileIsDoneAtOnce) {
  test::TempDir dir;
  OpenFile file(dir.file("partial"));
  ASSERT_EQ(::pwrite(file.fd, "abc", 3, 0), 3);
  EXPECT_EQ(DigestFollower(file.fd, dir.file("partial"), std::nullopt, 3).finish(), "");
  EXPECT_EQ(DigestFollower(file.fd, dir.file("partial"), DigestKind::Sha256, 0).finish(), digest_of("", DigestKind::Sha256));
}

TEST(DigestFollower, AFileShorterThanItsPrefixIsAnIoErrorNamingIt) {
  test::TempDir dir;
  OpenFile file(dir.file("partial"));
  ASSERT_EQ(::pwrite(file.fd, "abc", 3, 0), 3);
  DigestFollower follower(file.fd, dir.file("partial"), DigestKind::Sha256, 10);
  const std::string message = test::expect_error(ErrorCode::Io, [&] { follower.finish(); });
  EXPECT_NE(message.find(dir.file("partial")), std::string::npos) << message;
  EXPECT_NE(message.find("[3, 10)"), std::string::npos) << message;
}

TEST(DigestFollower, DestroyedBeforeTheFileIsCompleteItStopsWithoutWaiting) {
  test::TempDir dir;
  OpenFile file(dir.file("partial"));
  ASSERT_EQ(::pwrite(file.fd, "abc", 3, 0), 3);
  {
    DigestFollower follower(file.fd, dir.file("partial"), DigestKind::Sha256, 1000);
    follower.advance(3);
  }  // a cancelled download: the destructor returns (the test would hang otherwise)
  SUCCEED();
}

}  // namespace
}  // namespace wl::remote
