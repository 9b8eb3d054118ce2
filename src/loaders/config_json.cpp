#include "loaders/config_json.hpp"


namespace wl {

void attach_config_json(const Opener& opener, const std::string& path, std::map<std::string, std::string>& metadata) {
  if (metadata.count("config.json")) return;
  const std::string dir = opener.is_directory(path) ? path : opener.parent(path);
  const std::string config = opener.join(dir, "config.json");
  if (!opener.exists(config) || opener.is_directory(config)) return;
  const std::shared_ptr<ByteSource> file = opener.open(config);
  metadata["config.json"] = file->read_string(0, file->size());
}

}  // namespace wl
