#include "core/expected_digest.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "weightloader/content_digest.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A word that must be a sha256, from `what` (for the error).
std::string sha256_word(const std::string& word, const std::string& what) {
  std::string hex = lower(word);
  if (digest_named_by(hex) != DigestKind::Sha256)
    throw Error(ErrorCode::InvalidArgument, fmt::format("'{}' is not a sha256 (64 hex digits)", word), what);
  return hex;
}

// A quoted, possibly weak ETag's value.
std::string etag_value(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

std::optional<ExpectedDigest> from_sums(const fs::path& sums, const std::string& file) {
  std::ifstream in(sums);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string hex, name;
    if (!(words >> hex) || !std::getline(words >> std::ws, name)) continue;
    if (!name.empty() && name.front() == '*') name.erase(0, 1);  // sha256sum's binary-mode marker
    if (name.rfind("./", 0) == 0) name.erase(0, 2);
    if (name == file) return ExpectedDigest{sha256_word(hex, sums.string()), fmt::format("{} (line for {})", sums.string(), file)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ExpectedDigest> expected_sha256(const ByteSource& source) {
  if (source.kind() != SourceKind::LocalFile) {
    const std::string etag = lower(etag_value(source.version()));
    if (digest_named_by(etag) == DigestKind::Sha256) return ExpectedDigest{etag, "the object's ETag (the hub's LFS oid)"};
    return std::nullopt;
  }
  const fs::path path(source.name());
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (!ec && real.parent_path().filename() == "blobs" && digest_named_by(real.filename().string()) == DigestKind::Sha256)
    return ExpectedDigest{real.filename().string(), fmt::format("the Hugging Face cache blob's name ({})", real.string())};
  const fs::path sidecar = path.string() + ".sha256";
  if (fs::is_regular_file(sidecar, ec)) {
    std::ifstream in(sidecar);
    std::string word;
    in >> word;
    return ExpectedDigest{sha256_word(word, sidecar.string()), sidecar.string()};
  }
  const fs::path sums = path.parent_path() / "SHA256SUMS";
  if (fs::is_regular_file(sums, ec)) return from_sums(sums, path.filename().string());
  return std::nullopt;
}

}  // namespace wl
