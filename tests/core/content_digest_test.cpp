// The digests hub ETags and cache blob names name: sha256 for LFS files, the git blob sha1 for the others.
#include "weightloader/content_digest.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl {
namespace {

std::string digest_of(const std::string& bytes, DigestKind kind) {
  return content_digest(*memory_source("f", MemoryRegion::of_string(bytes)), kind);
}

TEST(ContentDigest, KnownVectors) {
  EXPECT_EQ(digest_of("abc", DigestKind::Sha256), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // `printf 'hello\n' | git hash-object --stdin`
  EXPECT_EQ(digest_of("hello\n", DigestKind::GitBlobSha1), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(digest_of("", DigestKind::GitBlobSha1), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST(ContentDigest, PieceByPieceEqualsWhole) {
  for (DigestKind kind : {DigestKind::Sha256, DigestKind::GitBlobSha1}) {
    ContentDigest digest(kind, 6, "f");
    digest.update("hel", 3);
    digest.update("", 0);
    digest.update("lo\n", 3);
    EXPECT_EQ(digest.hex(), digest_of("hello\n", kind));
  }
}

TEST(ContentDigest, WhatAnEtagNames) {
  EXPECT_EQ(digest_named_by(std::string(64, 'a')), DigestKind::Sha256);
  EXPECT_EQ(digest_named_by(std::string(40, '0')), DigestKind::GitBlobSha1);
  EXPECT_EQ(digest_named_by("5d41402abc4b2a76b9719d911017c592-3"), std::nullopt);
  EXPECT_EQ(digest_named_by(std::string(64, 'A')), std::nullopt);
}

TEST(ContentDigest, ASourceShorterThanPromisedIsTruncated) {
  test::expect_error(ErrorCode::Truncated,
                     [&] { content_digest(*memory_source("f", MemoryRegion::of_string("abc")), DigestKind::Sha256, 10); });
}

}  // namespace
}  // namespace wl
