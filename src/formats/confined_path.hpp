// Files that must stay inside a folder once symlinks are followed (a model's Hugging Face cache
// folder, whose snapshot files are symlinks into its blobs).
#pragma once

#include <string>

namespace wl {

// InvalidArgument naming `file` when it resolves (symlinks followed) outside `root`. Call it
// before opening `file`.
void require_inside(const std::string& file, const std::string& root);

}  // namespace wl
