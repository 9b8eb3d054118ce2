#include "weightloader/content_digest.hpp"

#include <openssl/evp.h>

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

std::optional<DigestKind> digest_named_by(const std::string& name) {
  if (name.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  if (name.size() == 64) return DigestKind::Sha256;
  if (name.size() == 40) return DigestKind::GitBlobSha1;
  return std::nullopt;
}

std::string content_digest(const ByteSource& source, DigestKind kind, std::optional<uint64_t> size) {
  const uint64_t n = size.value_or(source.size());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const auto fail = [&](const char* what) { return Error(ErrorCode::Io, fmt::format("{} failed (OpenSSL)", what), source.name()); };
  if (!ctx || EVP_DigestInit_ex(ctx.get(), kind == DigestKind::Sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
    throw fail("EVP_DigestInit_ex");
  if (kind == DigestKind::GitBlobSha1) {
    const std::string header = fmt::format("blob {}", n);
    if (EVP_DigestUpdate(ctx.get(), header.c_str(), header.size() + 1) != 1) throw fail("EVP_DigestUpdate");  // with its NUL
  }
  std::vector<std::byte> buffer(std::min<uint64_t>(n, 8ull << 20));
  for (uint64_t at = 0; at < n;) {
    const uint64_t take = std::min<uint64_t>(buffer.size(), n - at);
    source.read_exact(at, buffer.data(), take);
    if (EVP_DigestUpdate(ctx.get(), buffer.data(), take) != 1) throw fail("EVP_DigestUpdate");
    at += take;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw fail("EVP_DigestFinal_ex");
  std::string hex;
  for (unsigned i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace wl
