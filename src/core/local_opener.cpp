// The local file system as an opener: the only place that lists directories or follows links.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

class LocalOpener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override { return std::make_shared<File>(name); }

  bool exists(const std::string& name) const override {
    std::error_code ec;
    return fs::exists(name, ec);
  }

  bool is_directory(const std::string& name) const override {
    std::error_code ec;
    return fs::is_directory(name, ec);
  }

  std::vector<std::string> list(const std::string& directory) const override {
    std::error_code ec;
    std::vector<std::string> out;
    for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (fs::is_regular_file(it->path(), file_ec)) out.push_back(it->path().string());  // links followed
    }
    if (ec)
      throw Error(ec == std::errc::no_such_file_or_directory ? ErrorCode::FileNotFound : ErrorCode::Io,
                  fmt::format("cannot list the directory: {}", ec.message()), directory);
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string join(const std::string& directory, const std::string& relative) const override {
    return (fs::path(directory) / relative).string();
  }

  std::string parent(const std::string& name) const override {
    const fs::path p = fs::path(name).parent_path();
    return p.empty() ? "." : p.string();
  }

  std::string resolved(const std::string& name) const override {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(name, ec);
    return ec ? name : real.string();
  }
};

}  // namespace

std::shared_ptr<const Opener> local_opener() {
  static const std::shared_ptr<const Opener> opener = std::make_shared<LocalOpener>();
  return opener;
}

}  // namespace wl
