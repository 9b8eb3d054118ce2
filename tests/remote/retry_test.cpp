// The retry decorator every remote source is wrapped in, over a faulty source.
#include "remote/retry.hpp"

#include <gtest/gtest.h>

#include "support/faulty_source.hpp"
#include "test_util.hpp"

namespace wl::remote {
namespace {

std::shared_ptr<ByteSource> bytes(const std::string& s) { return memory_source("https://host/x.bin", MemoryRegion::of_string(s)); }

RetryPolicy quick(unsigned attempts) { return {attempts, std::chrono::milliseconds(1)}; }

TEST(Retry, ARetryableFailureIsRetriedAndTheReadSucceeds) {
  auto faulty = std::make_shared<FaultySource>(bytes("0123456789"), Faults{.fail_at_read = 1});
  RetryingSource source(faulty, quick(3));
  std::string out(10, '\0');
  source.read_exact(0, out.data(), 10);
  EXPECT_EQ(out, "0123456789");
  EXPECT_EQ(faulty->reads(), 2u);
}

TEST(Retry, AFinalFailureIsNotRetried) {
  auto faulty = std::make_shared<FaultySource>(bytes("0123456789"), Faults{.fail_at_read = 1, .retryable = false});
  RetryingSource source(faulty, quick(5));
  char c;
  test::expect_error(ErrorCode::Io, [&] { source.read_exact(0, &c, 1); });
  EXPECT_EQ(faulty->reads(), 1u);
}

TEST(Retry, GivesUpAfterTheLastAttemptSayingHowMany) {
  auto faulty = std::make_shared<FaultySource>(bytes("0123456789"), Faults{.fail_at_read = 1, .fail_every_read_after = true});
  RetryingSource source(faulty, quick(3));
  char c;
  const std::string msg = test::expect_error(ErrorCode::Io, [&] { source.read_exact(0, &c, 1); });
  EXPECT_NE(msg.find("gave up after 3 attempts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("https://host/x.bin"), std::string::npos) << msg;
  EXPECT_EQ(faulty->reads(), 3u);
}

TEST(Retry, ShortReadsResumeFromTheLastByte) {
  auto faulty = std::make_shared<FaultySource>(bytes("0123456789"), Faults{.max_read_bytes = 3});
  RetryingSource source(faulty, quick(1));
  std::string out(10, '\0');
  source.read_exact(0, out.data(), 10);
  EXPECT_EQ(out, "0123456789");
  EXPECT_EQ(faulty->reads(), 4u);
}

}  // namespace
}  // namespace wl::remote
