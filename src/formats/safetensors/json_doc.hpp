// JSON parsing that notices what nlohmann::json hides: a key given twice in one object (nlohmann
// keeps one value silently) and absurd nesting (serde_json, the reference parser, stops at 128).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace wl::safetensors {

// A key that appears twice in one JSON object.
struct RepeatedKey {
  int depth = 0;       // 1: a key of the top-level object, 2: of an object directly under one, ...
  std::string parent;  // the key that holds the object with the repeated key ("" at the top level)
  std::string key;
};

struct JsonDocument {
  nlohmann::json value;
  std::string error;                     // non-empty when the text is not JSON (the parser's message)
  std::optional<RepeatedKey> repeated;   // the first repeated key, if any
};

inline constexpr int kMaxJsonDepth = 128;

// Parses `text` (never throws for bad input: see `error`).
JsonDocument parse_json_document(std::string_view text);

}  // namespace wl::safetensors
