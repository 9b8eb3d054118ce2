#include "remote/aws_s3_address.hpp"

#include <regex>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::remote {

bool dns_compatible_bucket(const std::string& bucket) {
  static const std::regex label(R"(^[a-z0-9][a-z0-9\-]{1,61}[a-z0-9]$)");
  return std::regex_match(bucket, label);
}

namespace {

bool virtual_hosted(const S3Settings& s, const std::string& bucket) {
  switch (s.addressing) {
    case S3Addressing::Path: return false;
    case S3Addressing::Virtual: return true;
    case S3Addressing::Auto: break;
  }
  // A custom endpoint (MinIO, moto, a proxy) rarely has a DNS name per bucket: path-style there.
  return s.endpoint.empty() && dns_compatible_bucket(bucket);
}

}  // namespace

std::string s3_bucket_url(const S3Settings& s, const std::string& bucket) {
  const std::string endpoint = s.endpoint.empty() ? fmt::format("https://s3.{}.amazonaws.com", s.region) : s.endpoint;
  if (!virtual_hosted(s, bucket)) return endpoint + "/" + bucket;
  static const std::regex parts(R"(^(https?://)([^/?#]+)(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(endpoint, m, parts))
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("the S3 endpoint '{}' is not http(s)://host[:port][/path], so it cannot take "
                            "the bucket in its host name (virtual-hosted addressing)", endpoint));
  return fmt::format("{}{}.{}{}/", m[1].str(), bucket, m[2].str(), m[3].str());
}

std::string s3_object_url(const S3Settings& s, const std::string& bucket, const std::string& key) {
  std::string base = s3_bucket_url(s, bucket);
  if (base.ends_with("/")) base.pop_back();
  return base + "/" + url_escape_path(key);
}

}  // namespace wl::remote
