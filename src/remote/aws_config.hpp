// Where S3 requests go and what signs them, resolved as the AWS CLI and SDKs do: the environment
// first, then the selected profile of ~/.aws/credentials and ~/.aws/config.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "remote/http_client.hpp"

namespace wl::remote {

// Path-style: https://endpoint/bucket/key. Virtual-hosted: https://bucket.endpoint/key.
// Auto: virtual-hosted on AWS's own endpoint for a DNS-compatible bucket, else path-style.
enum class S3Addressing { Auto, Path, Virtual };

struct S3Settings {
  std::string region;                // never empty (us-east-1 when nothing names one)
  std::string endpoint;              // without a trailing '/'; empty: AWS's own for the region
  S3Addressing addressing = S3Addressing::Auto;
  std::optional<AwsSigning> signing;  // nullopt: anonymous requests (public buckets)
};

// An environment variable's value, "" when unset or empty.
using EnvLookup = std::function<std::string(const char* name)>;
std::string process_env(const char* name);

// The profile is AWS_PROFILE, else "default": "[profile NAME]" (or "[default]") in AWS_CONFIG_FILE
// (~/.aws/config), "[NAME]" in AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials); missing files are
// fine, a profile named by AWS_PROFILE that neither file has is not.
//   region:      AWS_REGION, AWS_DEFAULT_REGION, the profile's region, us-east-1
//   endpoint:    AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's "s3 = endpoint_url", its endpoint_url
//   addressing:  AWS_S3_ADDRESSING_STYLE, the profile's "s3 = addressing_style" (auto, path or virtual)
//   credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the profile's
//                aws_access_key_id + aws_secret_access_key (+ aws_session_token) in the credentials
//                file, else in the config file, else none
// InvalidArgument for a malformed file (its name and line), half a key pair, an unknown addressing
// style, or a profile that only names a credential source this library does not run (role_arn,
// credential_process, SSO).
S3Settings resolve_s3_settings(const EnvLookup& env = process_env);

}  // namespace wl::remote
