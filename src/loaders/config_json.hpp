// A model's config.json travels with its catalogue as metadata["config.json"], for engines.
#pragma once

#include <map>
#include <string>

#include "weightloader/byte_source.hpp"

namespace wl {

// Adds `dir`/config.json (when present and not already there) to `metadata`. For a file name,
// the directory that holds it (links followed, as everywhere in the user's tree).
void attach_config_json(const Opener& opener, const std::string& path, std::map<std::string, std::string>& metadata);

}  // namespace wl
