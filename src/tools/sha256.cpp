#include <openssl/evp.h>

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "weightloader/error.hpp"
#include "weightloader/verify_checkpoint.hpp"

namespace wl {

std::string sha256_hex(const ByteSource& source) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error(ErrorCode::Io, "cannot start a sha256 digest (OpenSSL)", source.name());
  std::vector<std::byte> buffer(8ull << 20);
  for (uint64_t offset = 0; offset < source.size();) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), source.size() - offset);
    source.read_exact(offset, buffer.data(), n);
    EVP_DigestUpdate(ctx.get(), buffer.data(), n);
    offset += n;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  std::string hex;
  for (unsigned i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace wl
