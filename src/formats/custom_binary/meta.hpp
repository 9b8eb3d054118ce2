// Parsing of the custom binary format's meta.txt (see weightloader/formats/custom_binary.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/tensor.hpp"

namespace wl::custom_binary {

struct MetaEntry {
  std::string name;
  Shape shape;
  size_t line = 0;  // 1-based line number in meta.txt
};

// Parses meta.txt's text; `file` names it in errors. Throws MetaLineInvalid for a malformed line
// and DuplicateTensorName for a name seen twice.
std::vector<MetaEntry> parse_meta(std::string_view text, const std::string& file);

}  // namespace wl::custom_binary
