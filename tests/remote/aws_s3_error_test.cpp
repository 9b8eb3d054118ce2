// S3's error answers turned into what to fix: the key id, the secret, the clock, the token or a policy.
#include "remote/aws_s3_error.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl::remote {
namespace {

std::string body(const std::string& code, const std::string& extra = "") {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>m</Message>" + extra +
         "<RequestId>1</RequestId></Error>";
}

const std::optional<AwsSigning> kSigned = AwsSigning{"us-east-1", "AKIAEXAMPLE", "secret", "", "the environment (AWS_ACCESS_KEY_ID)"};

std::string explain(long status, const std::string& code, const std::optional<AwsSigning>& signing = kSigned,
                    const std::string& extra = "") {
  const auto e = parse_s3_error(body(code, extra));
  EXPECT_TRUE(e.has_value());
  return e ? explain_s3_error(status, *e, signing) : "";
}

void expect_has(const std::string& text, const std::string& part) { EXPECT_NE(text.find(part), std::string::npos) << text; }

TEST(S3Error, ParsesTheErrorDocument) {
  const auto e = parse_s3_error(body("RequestTimeTooSkewed", "<RequestTime>20200101T000000Z</RequestTime><ServerTime>2026-01-01T00:00:00Z</ServerTime>"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "RequestTimeTooSkewed");
  EXPECT_EQ(e->message, "m");
  EXPECT_EQ(e->request_time, "20200101T000000Z");
  EXPECT_EQ(e->server_time, "2026-01-01T00:00:00Z");
  EXPECT_FALSE(parse_s3_error("<html>forbidden</html>"));
  EXPECT_FALSE(parse_s3_error(""));
}

TEST(S3Error, EachCodeNamesItsLikelyCause) {
  expect_has(explain(403, "InvalidAccessKeyId"), "the access key id is unknown to the server (HTTP 403 InvalidAccessKeyId: m)");
  expect_has(explain(403, "InvalidAccessKeyId"), "AKIAEXAMPLE from the environment (AWS_ACCESS_KEY_ID)");
  expect_has(explain(403, "SignatureDoesNotMatch"), "the secret access key is likely wrong");
  expect_has(explain(403, "RequestTimeTooSkewed", kSigned, "<RequestTime>r</RequestTime><ServerTime>s</ServerTime>"),
             "this machine's clock is off (HTTP 403 RequestTimeTooSkewed: m; server time s, request time r)");
  expect_has(explain(400, "ExpiredToken"), "the session token has expired");
  expect_has(explain(403, "InvalidToken"), "the session token is not valid for this key");
  expect_has(explain(403, "AccessDenied"), "access denied by policy");
  expect_has(explain(403, "AccessDenied", std::nullopt), "the request was anonymous, as no credentials were found");
  expect_has(explain(400, "InvalidRequest"), "the server refused the request (HTTP 400 InvalidRequest: m)");
}

TEST(S3Error, CheckStatusThrowsTheExplanationNamingTheUrl) {
  HttpResponse r;
  r.status = 403;
  r.body = body("SignatureDoesNotMatch");
  try {
    check_status(r, "s3://b/k", kSigned);
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_has(e.what(), "s3://b/k");
    expect_has(e.what(), "the secret access key is likely wrong");
    EXPECT_FALSE(e.retryable());
  }
  r.status = 503;
  r.body = body("SlowDown");
  try {
    check_status(r, "s3://b/k", kSigned);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.retryable());
  }
}

}  // namespace
}  // namespace wl::remote
