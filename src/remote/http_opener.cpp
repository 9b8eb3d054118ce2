// http:// and https:// names: objects opened with a HEAD; no listing (HTTP has none), so a
// directory URL ("…/model/") is found through the index files beside it.
#include "remote/openers.hpp"

#include <fmt/format.h>

#include "remote/remote_source.hpp"
#include "remote/retry.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

class HttpOpener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    if (name.ends_with("/")) throw Error(ErrorCode::InvalidArgument, "is a directory URL, not an object", name);
    const RemoteTarget target{name, name, std::nullopt};
    const RetryPolicy policy = RetryPolicy::from_environment();
    const HttpResponse r = with_retries(policy, [&] { return head(target); });
    if (r.status == 404) throw Error(ErrorCode::FileNotFound, "no such object (HTTP 404)", name);
    return std::make_shared<RetryingSource>(std::make_shared<RemoteSource>(target, r), policy);
  }
  bool exists(const std::string& name) const override {
    if (name.ends_with("/")) return true;  // a directory is a prefix: nothing to ask
    const RemoteTarget target{name, name, std::nullopt};
    return with_retries(RetryPolicy::from_environment(), [&] { return head(target); }).status != 404;
  }
  bool is_directory(const std::string& name) const override { return name.ends_with("/"); }
  std::vector<std::string> list(const std::string& directory) const override {
    throw Error(ErrorCode::InvalidArgument,
                "HTTP cannot list a directory: name the file, or a directory with a model.safetensors.index.json "
                "(the hf loader finds its shards through it)",
                directory);
  }
  std::string parent(const std::string& name) const override {
    const std::string trimmed = name.ends_with("/") ? name.substr(0, name.size() - 1) : name;
    return trimmed.substr(0, trimmed.find_last_of('/') + 1);  // keeps the slash: still a directory
  }
};

}  // namespace

std::shared_ptr<const Opener> http_opener() { return std::make_shared<HttpOpener>(); }

}  // namespace wl::remote
