#include "remote/aws_s3_error.hpp"

#include <regex>

#include <fmt/format.h>

namespace wl::remote {

namespace {

std::string element(const std::string& xml, const char* name) {
  const std::regex re(fmt::format("<{0}>([^<]*)</{0}>", name));
  std::smatch m;
  return std::regex_search(xml, m, re) ? std::string(m[1]) : std::string();
}

}  // namespace

std::optional<S3ErrorBody> parse_s3_error(const std::string& body) {
  if (body.find("<Error>") == std::string::npos) return std::nullopt;
  S3ErrorBody e{element(body, "Code"), element(body, "Message"), element(body, "ServerTime"), element(body, "RequestTime")};
  if (e.code.empty()) return std::nullopt;
  return e;
}

std::string explain_s3_error(long status, const S3ErrorBody& e, const std::optional<AwsSigning>& signing) {
  const std::string said = fmt::format("HTTP {} {}{}{}", status, e.code, e.message.empty() ? "" : ": ", e.message);
  const std::string key =
      signing ? fmt::format("access key id {} from {}", signing->access_key, signing->source) : "credentials";
  if (e.code == "InvalidAccessKeyId")
    return fmt::format("the access key id is unknown to the server ({}): check the {}", said, key);
  if (e.code == "SignatureDoesNotMatch")
    return fmt::format("the secret access key is likely wrong ({}): the server knows the {} but not a signature "
                       "made with this secret (or the request was changed on the way)", said, key);
  if (e.code == "RequestTimeTooSkewed")
    return fmt::format("this machine's clock is off ({}{}): signed requests must be within 15 minutes of the "
                       "server's time; set the clock (NTP)", said,
                       e.server_time.empty() ? "" : fmt::format("; server time {}, request time {}", e.server_time, e.request_time));
  if (e.code == "ExpiredToken")
    return fmt::format("the session token has expired ({}): get new temporary credentials for the {}", said, key);
  if (e.code == "InvalidToken" || e.code == "TokenRefreshRequired")
    return fmt::format("the session token is not valid for this key ({}): AWS_SESSION_TOKEN (or "
                       "aws_session_token) must come with the {}", said, key);
  if (e.code == "AccessDenied" || e.code == "AllAccessDisabled")
    return signing ? fmt::format("access denied by policy ({}): the {} is valid, but no IAM or bucket policy lets it "
                                 "make this request (s3:GetObject on the object, s3:ListBucket on the bucket)", said, key)
                   : fmt::format("access denied ({}): the request was anonymous, as no credentials were found "
                                 "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials)", said);
  return fmt::format("the server {} the request ({})", status >= 500 ? "failed on" : "refused", said);
}

}  // namespace wl::remote
