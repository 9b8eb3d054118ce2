// The digests hub ETags name: sha256 for LFS files, the git blob sha1 for the others.
#include "remote/content_digest.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "test_util.hpp"

namespace wl::remote {
namespace {

std::string digest_of(const std::string& bytes, DigestKind kind) {
  test::TempDir dir;
  test::write_bytes(dir.file("f"), bytes);
  const int fd = ::open(dir.file("f").c_str(), O_RDONLY);
  const std::string d = file_digest(fd, bytes.size(), kind, "f");
  ::close(fd);
  return d;
}

TEST(ContentDigest, KnownVectors) {
  EXPECT_EQ(digest_of("abc", DigestKind::Sha256), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `printf 'hello\n' | git hash-object --stdin`
  EXPECT_EQ(digest_of("hello\n", DigestKind::GitBlobSha1), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(digest_of("", DigestKind::GitBlobSha1), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST(ContentDigest, WhatAnEtagNames) {
  EXPECT_EQ(digest_named_by(std::string(64, 'a')), DigestKind::Sha256);
  EXPECT_EQ(digest_named_by(std::string(40, '0')), DigestKind::GitBlobSha1);
  EXPECT_EQ(digest_named_by("5d41402abc4b2a76b9719d911017c592-3"), std::nullopt);
  EXPECT_EQ(digest_named_by(std::string(64, 'A')), std::nullopt);
}

TEST(ContentDigest, AFileShorterThanPromisedIsTruncated) {
  test::TempDir dir;
  test::write_bytes(dir.file("f"), "abc");
  const int fd = ::open(dir.file("f").c_str(), O_RDONLY);
  test::expect_error(ErrorCode::Truncated, [&] { file_digest(fd, 10, DigestKind::Sha256, "f"); });
  ::close(fd);
}

}  // namespace
}  // namespace wl::remote
