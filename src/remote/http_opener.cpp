// http:// and https:// names: objects opened with a HEAD (none when another rank's catalogue gave size and ETag); no listing (HTTP has none), so a
// directory URL ("…/model/") is found through the index files beside it.
#include "remote/openers.hpp"

#include <fmt/format.h>

#include "remote/remote_source.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

class HttpOpener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    if (name.ends_with("/")) throw Error(ErrorCode::InvalidArgument, "is a directory URL, not an object", name);
    return open_remote({name, name, std::nullopt});
  }
  std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t size, const std::string& version) const override {
    if (name.ends_with("/")) throw Error(ErrorCode::InvalidArgument, "is a directory URL, not an object", name);
    return open_remote_known({name, name, std::nullopt}, size, version);
  }
  bool exists(const std::string& name) const override {
    if (name.ends_with("/")) return true;  // a directory is a prefix: nothing to ask
    return remote_exists({name, name, std::nullopt});
  }
  bool is_directory(const std::string& name) const override { return name.ends_with("/"); }
  std::vector<std::string> list(const std::string& directory) const override {
    throw Error(ErrorCode::InvalidArgument,
                "HTTP cannot list a directory: name the file, or a directory with a model.safetensors.index.json "
                "(the hf loader finds its shards through it)",
                directory);
  }
  std::string parent(const std::string& name) const override { return url_parent(name); }
};

}  // namespace

std::shared_ptr<const Opener> http_opener() { return std::make_shared<HttpOpener>(); }

}  // namespace wl::remote
