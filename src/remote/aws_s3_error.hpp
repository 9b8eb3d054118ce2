// What an S3 error answer (the XML body of a 4xx: <Error><Code>…</Code><Message>…</Message>) says
// is wrong, in terms of what the user can fix: the key id, the secret, the session token, the clock
// or a policy.
#pragma once

#include <optional>
#include <string>

#include "remote/http_client.hpp"

namespace wl::remote {

struct S3ErrorBody {
  std::string code, message, server_time, request_time;  // empty when absent
};

// The fields of an S3 <Error> document, or nullopt when `body` is not one.
std::optional<S3ErrorBody> parse_s3_error(const std::string& body);

// A sentence for an HTTP `status` whose body is `error`, signed with `signing` (nullopt: anonymous):
// "the secret access key is likely wrong (HTTP 403 SignatureDoesNotMatch: …): …".
std::string explain_s3_error(long status, const S3ErrorBody& error, const std::optional<AwsSigning>& signing);

}  // namespace wl::remote
