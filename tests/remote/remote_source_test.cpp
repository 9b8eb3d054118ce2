// A remote object's price per request, for the I/O planner's choice between reading a gap and a
// second request: WL_HTTP_LATENCY_MS and WL_HTTP_BANDWIDTH_MBPS, else an object store's usual figures.
#include "remote/remote_source.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/io_plan.hpp"
#include "test_util.hpp"

namespace wl::remote {
namespace {

// Sets (or with nullptr unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RemoteRequestCost, DefaultsReadGapsUnderTwoMegabytes) {
  ScopedEnv latency("WL_HTTP_LATENCY_MS", nullptr), bandwidth("WL_HTTP_BANDWIDTH_MBPS", nullptr);
  const RequestCost cost = remote_request_cost();
  EXPECT_DOUBLE_EQ(cost.latency_s, 0.020);
  EXPECT_DOUBLE_EQ(cost.bytes_per_s, 100e6);
  EXPECT_TRUE(gap_worth_reading(1'999'999, cost));
  EXPECT_FALSE(gap_worth_reading(2'000'000, cost));
  // Known to this process from another's HEAD: the same price, the ETag kept as its version.
  const RemoteSource known({"https://host/m.bin", "https://host/m.bin", std::nullopt}, 1234, "\"abc\"");
  EXPECT_EQ(known.size(), 1234u);
  EXPECT_EQ(known.version(), "\"abc\"");
  EXPECT_DOUBLE_EQ(known.request_cost().latency_s, 0.020);
}

TEST(RemoteRequestCost, TheEnvironmentSetsIt) {
  ScopedEnv latency("WL_HTTP_LATENCY_MS", "0.5"), bandwidth("WL_HTTP_BANDWIDTH_MBPS", "1000");
  const RequestCost cost = remote_request_cost();
  EXPECT_DOUBLE_EQ(cost.latency_s, 0.0005);
  EXPECT_DOUBLE_EQ(cost.bytes_per_s, 1e9);
  EXPECT_TRUE(gap_worth_reading(499'999, cost));
  EXPECT_FALSE(gap_worth_reading(500'001, cost));
  ScopedEnv never("WL_HTTP_LATENCY_MS", "0");  // no gap is worth a byte
  EXPECT_FALSE(gap_worth_reading(1, remote_request_cost()));
}

TEST(RemoteRequestCost, ANonNumberIsRefusedNamingTheVariable) {
  for (const char* bad : {"fast", "-1", "20ms", ""}) {
    SCOPED_TRACE(bad);
    ScopedEnv latency("WL_HTTP_LATENCY_MS", bad);
    if (!*bad) {  // empty: unset
      EXPECT_DOUBLE_EQ(remote_request_cost().latency_s, 0.020);
      continue;
    }
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [] { remote_request_cost(); });
    EXPECT_NE(msg.find("WL_HTTP_LATENCY_MS"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace wl::remote
