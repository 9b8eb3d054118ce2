// How checkpoint tensor names become parameter names.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "weightloader/export.hpp"

namespace wl {

// Rules applied in this order: drop, strip_prefix, exact renames, regex renames, add_prefix.
// A name that a drop pattern matches fully is skipped (reported, never loaded).
class WL_API NameMapping {
 public:
  NameMapping& strip_prefix(std::string prefix);
  NameMapping& add_prefix(std::string prefix);
  NameMapping& rename(std::string from, std::string to);
  NameMapping& regex_rename(const std::string& pattern, std::string replacement);  // ECMAScript, $1
  NameMapping& drop(const std::string& pattern);                                   // full match

  // The parameter name for a checkpoint name; nullopt if it is dropped.
  std::optional<std::string> map(std::string_view checkpoint_name) const;
  bool empty() const noexcept;

 private:
  std::vector<std::string> strip_prefixes_;
  std::string add_prefix_;
  std::vector<std::pair<std::string, std::string>> renames_;
  std::vector<std::pair<std::regex, std::string>> regex_renames_;
  std::vector<std::regex> drops_;
};

}  // namespace wl
