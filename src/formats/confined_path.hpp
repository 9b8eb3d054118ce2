// Files that must stay inside a folder once symlinks are followed (a model's Hugging Face cache
// folder, whose snapshot files are symlinks into its blobs).
#pragma once

#include <string>

#include "weightloader/byte_source.hpp"

namespace wl {

// InvalidArgument naming `file` when it resolves (links followed, as `opener` resolves them)
// outside `root`. Call it before opening `file`.
void require_inside(const Opener& opener, const std::string& file, const std::string& root);

}  // namespace wl
