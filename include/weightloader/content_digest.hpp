// Checksums of content, as the Hugging Face hub names it: an LFS file's ETag (and its blob's file
// name in the cache) is the sha256 of its bytes, any other file's the git blob id (sha1 of
// "blob <size>\0" + bytes). OpenSSL's libcrypto computes both; `verify` and the hub downloader
// both check through here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "weightloader/byte_source.hpp"
#include "weightloader/export.hpp"

namespace wl {

enum class DigestKind { Sha256, GitBlobSha1 };

// What a name (an ETag without quotes and W/, a blob's file name) says it is a digest of: 64
// lowercase hex digits a sha256, 40 a git blob sha1; nullopt for anything else.
WL_API std::optional<DigestKind> digest_named_by(const std::string& name);

// A digest computed piece by piece, in order: of exactly `size` bytes (the git blob header names
// the size before the bytes). Throws Io naming `origin` if OpenSSL fails.
class WL_API ContentDigest {
 public:
  ContentDigest(DigestKind kind, uint64_t size, std::string origin);
  ~ContentDigest();
  ContentDigest(const ContentDigest&) = delete;
  ContentDigest& operator=(const ContentDigest&) = delete;
  void update(const void* data, uint64_t n);
  std::string hex();  // lowercase; once, after the last update

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
  std::string origin_;
};

// The lowercase hex digest of the first `size` bytes of `source` (all of it by default); Io or
// Truncated naming the source if they cannot be read.
WL_API std::string content_digest(const ByteSource& source, DigestKind kind, std::optional<uint64_t> size = std::nullopt);

}  // namespace wl
