// The INI files of the AWS tools (~/.aws/config, ~/.aws/credentials), read as strictly as
// botocore's configparser does: a malformed line is an error naming the file and the line.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace wl::remote {

// Section name → setting name (lower case) → value. A nested block ("s3 =" followed by indented
// "addressing_style = path" lines) is flattened to "s3.addressing_style".
using IniSections = std::map<std::string, std::map<std::string, std::string>>;

// `text` as read from `path` (named in errors). Blank lines and lines starting with '#' or ';' are
// skipped; values are trimmed, with no inline comments. InvalidArgument for a line that is neither
// "[section]" nor "name = value", a setting outside a section, an indented line outside a nested
// block, or a section or setting given twice.
IniSections parse_ini(const std::string& text, const std::string& path);

// The file at `path` parsed, or nullopt when it does not exist. Io when it exists but cannot be read.
std::optional<IniSections> read_ini(const std::string& path);

}  // namespace wl::remote
