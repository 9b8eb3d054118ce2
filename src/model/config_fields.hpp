// Typed access to a configuration's JSON fields (config.json, params.json, generation_config.json)
// and to a catalogue's metadata (GGUF keys, llama2.c header fields), with the file and the field
// named in every error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"

namespace wl {

inline Error config_invalid(const std::string& file, const std::string& field, const std::string& why) {
  return Error(ErrorCode::ConfigInvalid, fmt::format("field '{}': {}", field, why), file);
}

class JsonFields {
 public:
  JsonFields(const nlohmann::json& c, std::string file) : c_(c), file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  const nlohmann::json& at(const char* key) const { return c_[key]; }
  bool has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }
  bool is_null(const char* key) const { return c_.contains(key) && c_[key].is_null(); }  // given as null
  uint64_t uint(const char* key, std::optional<uint64_t> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      throw config_invalid(file_, key, "missing");
    }
    if (!c_[key].is_number_unsigned()) throw config_invalid(file_, key, fmt::format("{} is not a non-negative integer", c_[key].dump()));
    return c_[key].get<uint64_t>();
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!c_[key].is_number()) throw config_invalid(file_, key, fmt::format("{} is not a number", c_[key].dump()));
    return c_[key].get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!c_[key].is_boolean()) throw config_invalid(file_, key, fmt::format("{} is not true or false", c_[key].dump()));
    return c_[key].get<bool>();
  }
  std::string string(const char* key, const std::string& fallback = {}) const {
    if (!has(key)) return fallback;
    if (!c_[key].is_string()) throw config_invalid(file_, key, fmt::format("{} is not a string", c_[key].dump()));
    return c_[key].get<std::string>();
  }

 private:
  const nlohmann::json& c_;
  std::string file_;
};

// Metadata values (GGUF keys, llama2.c header fields) are strings in the catalogue.
class MetadataFields {
 public:
  MetadataFields(const std::map<std::string, std::string>& m, std::string file) : m_(m), file_(std::move(file)) {}
  bool has(const std::string& key) const { return m_.count(key) != 0; }
  uint64_t uint(const std::string& key, std::optional<uint64_t> fallback = std::nullopt) const {
    auto it = m_.find(key);
    if (it == m_.end()) {
      if (fallback) return *fallback;
      throw config_invalid(file_, key, "missing");
    }
    size_t used = 0;
    try {
      const unsigned long long v = std::stoull(it->second, &used);
      if (used == it->second.size() && it->second[0] != '-') return v;
    } catch (const std::exception&) {
    }
    throw config_invalid(file_, key, fmt::format("'{}' is not a non-negative integer", it->second));
  }
  double number(const std::string& key, std::optional<double> fallback = std::nullopt) const {
    auto it = m_.find(key);
    if (it == m_.end()) {
      if (fallback) return *fallback;
      throw config_invalid(file_, key, "missing");
    }
    size_t used = 0;
    try {
      const double v = std::stod(it->second, &used);
      if (used == it->second.size()) return v;
    } catch (const std::exception&) {
    }
    throw config_invalid(file_, key, fmt::format("'{}' is not a number", it->second));
  }
  std::string string(const std::string& key) const {
    auto it = m_.find(key);
    return it == m_.end() ? std::string() : it->second;
  }
  const std::string& file() const { return file_; }

 private:
  const std::map<std::string, std::string>& m_;
  std::string file_;
};

}  // namespace wl
