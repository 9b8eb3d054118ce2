#include "weightloader/name_mapping.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {
std::regex compile(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error(ErrorCode::InvalidArgument, fmt::format("invalid regular expression '{}': {}", pattern, e.what()));
  }
}
}  // namespace

NameMapping& NameMapping::strip_prefix(std::string prefix) {
  strip_prefixes_.push_back(std::move(prefix));
  return *this;
}

NameMapping& NameMapping::add_prefix(std::string prefix) {
  add_prefix_ = std::move(prefix);
  return *this;
}

NameMapping& NameMapping::rename(std::string from, std::string to) {
  renames_.emplace_back(std::move(from), std::move(to));
  return *this;
}

NameMapping& NameMapping::regex_rename(const std::string& pattern, std::string replacement) {
  regex_renames_.emplace_back(compile(pattern), std::move(replacement));
  return *this;
}

NameMapping& NameMapping::drop(const std::string& pattern) {
  drops_.push_back(compile(pattern));
  return *this;
}

bool NameMapping::empty() const noexcept {
  return strip_prefixes_.empty() && add_prefix_.empty() && renames_.empty() && regex_renames_.empty() && drops_.empty();
}

std::optional<std::string> NameMapping::map(std::string_view checkpoint_name) const {
  std::string name(checkpoint_name);
  for (const std::regex& d : drops_)
    if (std::regex_match(name, d)) return std::nullopt;
  for (const std::string& p : strip_prefixes_)
    if (name.starts_with(p)) {
      name.erase(0, p.size());
      break;
    }
  for (const auto& [from, to] : renames_)
    if (name == from) {
      name = to;
      break;
    }
  for (const auto& [re, replacement] : regex_renames_) name = std::regex_replace(name, re, replacement);
  if (!add_prefix_.empty() && !name.starts_with(add_prefix_)) name = add_prefix_ + name;
  return name;
}

}  // namespace wl
