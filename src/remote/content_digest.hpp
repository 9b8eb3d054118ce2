// Checking downloaded content against the name the hub gives it: an LFS file's ETag is the sha256
// of its bytes, any other file's the git blob id (sha1 of "blob <size>\0" + bytes). OpenSSL's
// libcrypto computes both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace wl::remote {

enum class DigestKind { Sha256, GitBlobSha1 };

// What an ETag (quotes and W/ removed) names: 64 hex digits a sha256, 40 a git blob sha1; nullopt
// for anything else (then only the size can be checked).
std::optional<DigestKind> digest_named_by(const std::string& etag);

// The lower-case hex digest of the first `size` bytes of the open file `fd` (read with pread);
// Io naming `name` if it cannot be read.
std::string file_digest(int fd, uint64_t size, DigestKind kind, const std::string& name);

}  // namespace wl::remote
