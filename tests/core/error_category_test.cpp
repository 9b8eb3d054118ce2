// The one table bindings map errors from: each code's category, an Io error's errno deciding
// between Io and PermissionDenied, and code names that read back.
#include <gtest/gtest.h>

#include <cerrno>

#include "core/file.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

TEST(ErrorCategory, FollowsTheCodeAndAnIoErrorsErrno) {
  EXPECT_EQ(error_category(ErrorCode::FileNotFound), ErrorCategory::NotFound);
  EXPECT_EQ(error_category(ErrorCode::ShapeMismatch), ErrorCategory::InvalidArgument);
  EXPECT_EQ(error_category(ErrorCode::UnknownFormat), ErrorCategory::UnknownFormat);
  EXPECT_EQ(error_category(ErrorCode::HeaderTooLarge), ErrorCategory::Format);
  EXPECT_EQ(error_category(ErrorCode::RankFailed), ErrorCategory::Distributed);
  EXPECT_EQ(error_category(ErrorCode::Io, EIO), ErrorCategory::Io);
  EXPECT_EQ(error_category(ErrorCode::Io, EACCES), ErrorCategory::PermissionDenied);
  EXPECT_EQ(error_category_name(ErrorCategory::PermissionDenied), "permission_denied");
}

TEST(ErrorCategory, AFailedSystemCallCarriesItsErrno) {
  try {
    File("/nonexistent-dir/no-such-file");
    FAIL() << "opened a file that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FileNotFound);
    EXPECT_EQ(e.os_errno(), ENOENT);
    EXPECT_EQ(e.category(), ErrorCategory::NotFound);
  }
  errno = EACCES;
  const Error denied = errno_error("cannot open", "/secret");
  EXPECT_EQ(denied.code(), ErrorCode::Io);
  EXPECT_EQ(denied.os_errno(), EACCES);
  EXPECT_EQ(denied.category(), ErrorCategory::PermissionDenied);
  EXPECT_EQ(Error(ErrorCode::Io, "a dropped connection").os_errno(), 0);
}

TEST(ErrorCategory, EveryCodeNameReadsBack) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::TokenOutOfRange); ++c) {
    const auto code = static_cast<ErrorCode>(c);
    EXPECT_EQ(error_code_named(error_code_name(code)), code);
  }
  EXPECT_EQ(error_code_named("NoSuchCode"), std::nullopt);
}

}  // namespace
}  // namespace wl
