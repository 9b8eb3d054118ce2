// The HTTP URL of an S3 bucket or object, path-style or virtual-hosted (S3Settings::addressing).
#pragma once

#include <string>

#include "remote/aws_config.hpp"

namespace wl::remote {

// A name S3 accepts as a host label: 3 to 63 lower-case letters, digits and '-', starting and
// ending with a letter or digit (no dots: a dotted name would not match AWS's wildcard certificate).
bool dns_compatible_bucket(const std::string& bucket);

// "https://s3.us-east-1.amazonaws.com/bucket" (path-style) or "https://bucket.s3.us-east-1.amazonaws.com/"
// (virtual-hosted): object URLs are this (without its trailing '/') + "/" + the escaped key, listing
// URLs this + "?list-type=2&...". InvalidArgument for an endpoint that is not http(s)://host[:port][/path].
std::string s3_bucket_url(const S3Settings& settings, const std::string& bucket);
std::string s3_object_url(const S3Settings& settings, const std::string& bucket, const std::string& key);

}  // namespace wl::remote
