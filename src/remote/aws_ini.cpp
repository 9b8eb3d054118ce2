#include "remote/aws_ini.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

IniSections parse_ini(const std::string& text, const std::string& path) {
  IniSections sections;
  std::map<std::string, std::string>* section = nullptr;
  // The last setting of the section at its own level (as configparser does it, a line indented
  // deeper than that one belongs to it): its name, its indentation, and whether it opens a block.
  std::string last;
  size_t last_indent = 0;
  bool block = false;
  std::istringstream in(text);
  std::string raw;
  for (unsigned number = 1; std::getline(in, raw); ++number) {
    const auto fail = [&](const std::string& why) {
      return Error(ErrorCode::InvalidArgument, fmt::format("line {}: {}: '{}'", number, why, trim(raw)), path);
    };
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const size_t indent = raw.find_first_not_of(" \t");
    if (line[0] == '[') {
      if (line.back() != ']') throw fail("a section header must end with ']'");
      const std::string name = trim(line.substr(1, line.size() - 2));
      if (name.empty()) throw fail("an empty section name");
      if (sections.contains(name)) throw fail(fmt::format("section [{}] appears twice", name));
      section = &sections[name];
      last.clear();
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw fail("expected 'name = value'");
    const std::string key = lower(trim(line.substr(0, eq))), value = trim(line.substr(eq + 1));
    if (key.empty()) throw fail("a setting with no name");
    if (section == nullptr) throw fail("a setting before any [section]");
    const bool inner = !last.empty() && indent > last_indent;
    if (inner && !block)
      throw fail(fmt::format("an indented line continuing the value of '{}' (only a '{} =' line with no value "
                             "opens a block of settings)", last, last));
    const std::string full = inner ? last + "." + key : key;
    if (section->contains(full)) throw fail(fmt::format("setting '{}' appears twice in this section", full));
    (*section)[full] = value;
    if (!inner) {
      last = key;
      last_indent = indent;
      block = value.empty();
    }
  }
  return sections;
}

std::optional<IniSections> read_ini(const std::string& path) {
  errno = 0;
  std::ifstream file(path);
  if (!file) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("cannot read it", path);
  }
  std::ostringstream text;
  text << file.rdbuf();
  return parse_ini(text.str(), path);
}

}  // namespace wl::remote
