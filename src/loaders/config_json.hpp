// A model's config.json travels with its catalogue as metadata["config.json"], for engines.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace wl {

// Adds `dir`/config.json (when present and not already there) to `metadata`. For a file path,
// the directory that holds it.
void attach_config_json(const std::filesystem::path& path, std::map<std::string, std::string>& metadata);

}  // namespace wl
