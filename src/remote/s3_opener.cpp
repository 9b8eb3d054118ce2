// s3://bucket/key names: requests to the endpoint, path-style or virtual-hosted, signed with AWS
// Signature V4 by libcurl, with the region, endpoint and credentials the environment and the AWS
// profile files give (aws_config.hpp); "s3://bucket/prefix/" is a directory, listed with ListObjectsV2.
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "remote/aws_config.hpp"
#include "remote/aws_s3_address.hpp"
#include "remote/openers.hpp"
#include "remote/remote_source.hpp"
#include "remote/retry.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

struct S3Location {
  std::string bucket, key;  // key may be empty (the bucket) or end with '/' (a prefix)
};

S3Location parse(const std::string& name) {
  static const std::regex s3(R"(^s3://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(/(.*))?$)");
  std::smatch m;
  if (!std::regex_match(name, m, s3))
    throw Error(ErrorCode::InvalidArgument, "not an S3 URL of the form s3://bucket/key", name);
  return {m[1], m[3]};
}

class S3Opener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    const S3Location loc = parse(name);
    if (loc.key.empty() || loc.key.ends_with("/"))
      throw Error(ErrorCode::InvalidArgument, "is a bucket or a prefix, not an object", name);
    return open_remote(target_for(name, loc));
  }
  std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t size, const std::string& version) const override {
    const S3Location loc = parse(name);
    if (loc.key.empty() || loc.key.ends_with("/"))
      throw Error(ErrorCode::InvalidArgument, "is a bucket or a prefix, not an object", name);
    return open_remote_known(target_for(name, loc), size, version);
  }

  bool exists(const std::string& name) const override {
    const S3Location loc = parse(name);
    if (loc.key.empty() || loc.key.ends_with("/")) return is_directory(name);
    return remote_exists(target_for(name, loc));
  }

  bool is_directory(const std::string& name) const override {
    const S3Location loc = parse(name);
    if (!loc.key.empty() && !loc.key.ends_with("/")) return false;
    return !list_keys(name, loc, 1).empty();
  }

  std::vector<std::string> list(const std::string& directory) const override {
    S3Location loc = parse(directory);
    if (!loc.key.empty() && !loc.key.ends_with("/")) loc.key += "/";
    std::vector<std::string> names;
    for (const std::string& key : list_keys(directory, loc, 0)) names.push_back("s3://" + loc.bucket + "/" + key);
    return names;  // ListObjectsV2 returns keys in order
  }

  std::string parent(const std::string& name) const override { return url_parent(name); }

 private:
  // Read for every name: the environment (and the profile files) may change between loads.
  static RemoteTarget target_for(const std::string& name, const S3Location& loc) {
    const S3Settings settings = resolve_s3_settings();
    return {name, s3_object_url(settings, loc.bucket, loc.key), settings.signing};
  }

  // Keys directly under the prefix loc.key (delimiter '/'), at most `limit` (0: all), in order.
  static std::vector<std::string> list_keys(const std::string& name, const S3Location& loc, unsigned limit) {
    std::vector<std::string> keys;
    std::string token;
    static const std::regex key_re("<Key>([^<]*)</Key>"), token_re("<NextContinuationToken>([^<]*)</NextContinuationToken>");
    const S3Settings settings = resolve_s3_settings();
    // The query as SigV4 signs it (each value escaped, '/' too, names in order): what is sent is what
    // the server's canonical request has, however the signer and the server normalise it.
    const auto escape = [](const std::string& v) { return std::regex_replace(url_escape_path(v), std::regex("/"), "%2F"); };
    do {
      std::string url = s3_bucket_url(settings, loc.bucket) + "?";
      if (!token.empty()) url += "continuation-token=" + escape(token) + "&";
      url += "delimiter=%2F&list-type=2";
      if (limit) url += fmt::format("&max-keys={}", limit);
      url += "&prefix=" + escape(loc.key);
      HttpRequest request;
      request.url = url;
      request.aws = settings.signing;
      const HttpResponse r =
          with_retries(RetryPolicy::from_environment(), [&] { return perform(request, name); });
      if (r.status == 404) throw Error(ErrorCode::FileNotFound, "no such bucket (HTTP 404)", name);
      check_status(r, name, settings.signing);
      for (std::sregex_iterator it(r.body.begin(), r.body.end(), key_re), end; it != end; ++it) {
        std::string key = (*it)[1];
        for (const auto& [entity, ch] : {std::pair{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}})
          for (size_t at = key.find(entity); at != std::string::npos; at = key.find(entity, at + 1)) key.replace(at, std::strlen(entity), ch);
        keys.push_back(std::move(key));
        if (limit && keys.size() >= limit) return keys;
      }
      std::smatch m;
      token = std::regex_search(r.body, m, token_re) ? std::string(m[1]) : std::string();
    } while (!token.empty());
    return keys;
  }
};

}  // namespace

std::shared_ptr<const Opener> s3_opener() { return std::make_shared<S3Opener>(); }

}  // namespace wl::remote
