#include "loaders/config_json.hpp"

#include "formats/confined_path.hpp"

#include <fstream>
#include <sstream>

namespace wl {

void attach_config_json(const std::filesystem::path& path, std::map<std::string, std::string>& metadata,
                        const std::filesystem::path& root) {
  if (metadata.count("config.json")) return;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
  if (!std::filesystem::exists(dir / "config.json", ec)) return;
  if (!root.empty()) require_inside((dir / "config.json").string(), root.string());
  std::ifstream in(dir / "config.json");
  if (!in) return;
  std::ostringstream text;
  text << in.rdbuf();
  metadata["config.json"] = text.str();
}

}  // namespace wl
