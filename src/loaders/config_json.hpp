// A model's config.json travels with its catalogue as metadata["config.json"], for engines.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace wl {

// Adds `dir`/config.json (when present and not already there) to `metadata`. For a file path,
// the directory that holds it. With `root`, a config.json resolving outside it is refused
// (InvalidArgument), as every file of a Hugging Face cache folder.
void attach_config_json(const std::filesystem::path& path, std::map<std::string, std::string>& metadata,
                        const std::filesystem::path& root = {});

}  // namespace wl
