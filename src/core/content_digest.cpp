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

struct ContentDigest::Context {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

ContentDigest::ContentDigest(DigestKind kind, uint64_t size, std::string origin)
    : ctx_(std::make_unique<Context>()), origin_(std::move(origin)) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md.get(), kind == DigestKind::Sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
    throw Error(ErrorCode::Io, "EVP_DigestInit_ex failed (OpenSSL)", origin_);
  if (kind == DigestKind::GitBlobSha1) {
    const std::string header = fmt::format("blob {}", size);
    update(header.c_str(), header.size() + 1);  // with its NUL
  }
}

ContentDigest::~ContentDigest() = default;

void ContentDigest::update(const void* data, uint64_t n) {
  if (EVP_DigestUpdate(ctx_->md.get(), data, n) != 1) throw Error(ErrorCode::Io, "EVP_DigestUpdate failed (OpenSSL)", origin_);
}

std::string ContentDigest::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_->md.get(), digest, &length) != 1)
    throw Error(ErrorCode::Io, "EVP_DigestFinal_ex failed (OpenSSL)", origin_);
  std::string out;
  for (unsigned i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string content_digest(const ByteSource& source, DigestKind kind, std::optional<uint64_t> size) {
  const uint64_t n = size.value_or(source.size());
  ContentDigest digest(kind, n, source.name());
  std::vector<std::byte> buffer(std::min<uint64_t>(n, 8ull << 20));
  for (uint64_t at = 0; at < n;) {
    const uint64_t take = std::min<uint64_t>(buffer.size(), n - at);
    source.read_exact(at, buffer.data(), take);
    digest.update(buffer.data(), take);
    at += take;
  }
  return digest.hex();
}

}  // namespace wl
