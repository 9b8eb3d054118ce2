#include "remote/content_digest.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::remote {

std::optional<DigestKind> digest_named_by(const std::string& etag) {
  if (etag.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  if (etag.size() == 64) return DigestKind::Sha256;
  if (etag.size() == 40) return DigestKind::GitBlobSha1;
  return std::nullopt;
}

std::string file_digest(int fd, uint64_t size, DigestKind kind, const std::string& name) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const auto fail = [&](const char* what) { return Error(ErrorCode::Io, fmt::format("{} failed while checking the download", what), name); };
  if (!ctx || EVP_DigestInit_ex(ctx.get(), kind == DigestKind::Sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
    throw fail("EVP_DigestInit_ex");
  if (kind == DigestKind::GitBlobSha1) {
    const std::string header = fmt::format("blob {}", size);
    if (EVP_DigestUpdate(ctx.get(), header.c_str(), header.size() + 1) != 1) throw fail("EVP_DigestUpdate");  // with its NUL
  }
  std::vector<unsigned char> buffer(4u << 20);
  for (uint64_t at = 0; at < size;) {
    const ssize_t n = ::pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), size - at), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorCode::Io, fmt::format("read failed while checking the download: {}", std::strerror(errno)), name);
    if (n == 0) throw Error(ErrorCode::Truncated, fmt::format("ended at byte {} of {} while checking the download", at, size), name);
    if (EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n)) != 1) throw fail("EVP_DigestUpdate");
    at += static_cast<uint64_t>(n);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw fail("EVP_DigestFinal_ex");
  std::string hex;
  for (unsigned i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace wl::remote
