// S3 URLs: virtual-hosted on AWS for DNS-compatible buckets, path-style for custom endpoints,
// either when asked.
#include "remote/aws_s3_address.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl::remote {
namespace {

S3Settings settings(std::string endpoint, S3Addressing addressing, std::string region = "eu-west-1") {
  S3Settings s;
  s.region = std::move(region);
  s.endpoint = std::move(endpoint);
  s.addressing = addressing;
  return s;
}

TEST(S3Address, AwsItselfIsVirtualHostedForADnsCompatibleBucket) {
  const S3Settings s = settings("", S3Addressing::Auto);
  EXPECT_EQ(s3_object_url(s, "my-bucket", "llama/model 1.safetensors"),
            "https://my-bucket.s3.eu-west-1.amazonaws.com/llama/model%201.safetensors");
  EXPECT_EQ(s3_bucket_url(s, "my-bucket"), "https://my-bucket.s3.eu-west-1.amazonaws.com/");
  // a dotted name would not match the *.s3.amazonaws.com certificate: path-style
  EXPECT_EQ(s3_object_url(s, "my.bucket", "k"), "https://s3.eu-west-1.amazonaws.com/my.bucket/k");
}

TEST(S3Address, ACustomEndpointIsPathStyleUnlessAskedOtherwise) {
  EXPECT_EQ(s3_object_url(settings("http://127.0.0.1:9000", S3Addressing::Auto), "b", "x/y"), "http://127.0.0.1:9000/b/x/y");
  EXPECT_EQ(s3_bucket_url(settings("http://127.0.0.1:9000", S3Addressing::Auto), "bkt"), "http://127.0.0.1:9000/bkt");
  EXPECT_EQ(s3_object_url(settings("http://s3.localhost:9000", S3Addressing::Virtual), "bkt", "x"),
            "http://bkt.s3.localhost:9000/x");
  EXPECT_EQ(s3_object_url(settings("https://gw.example/s3", S3Addressing::Virtual), "bkt", "x"),
            "https://bkt.gw.example/s3/x");
  EXPECT_EQ(s3_object_url(settings("", S3Addressing::Path), "bkt", "x"), "https://s3.eu-west-1.amazonaws.com/bkt/x");
}

TEST(S3Address, AnEndpointThatCannotTakeTheBucketIsAnError) {
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [] {
    s3_object_url(settings("127.0.0.1:9000", S3Addressing::Virtual), "bkt", "x");
  });
  EXPECT_NE(what.find("127.0.0.1:9000"), std::string::npos) << what;
}

TEST(S3Address, DnsCompatibleBucketNames) {
  for (const char* ok : {"abc", "my-bucket-1", "0bucket9"}) EXPECT_TRUE(dns_compatible_bucket(ok)) << ok;
  for (const char* bad : {"ab", "My-Bucket", "a.b.c", "-abc", "abc-", "a_b_c"}) EXPECT_FALSE(dns_compatible_bucket(bad)) << bad;
}

}  // namespace
}  // namespace wl::remote
