#include "formats/safetensors/json_doc.hpp"

#include <unordered_set>
#include <vector>

namespace wl::safetensors {
namespace {

// One open JSON object: the keys seen so far, the key it sits under, and its latest key.
struct OpenObject {
  std::unordered_set<std::string> keys;
  std::string name;
  std::string current_key;
};

struct TooDeep {};

}  // namespace

JsonDocument parse_json_document(std::string_view text) {
  JsonDocument doc;
  std::vector<OpenObject> open;
  const auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (depth >= kMaxJsonDepth) throw TooDeep{};
        if (event == Event::object_start) open.push_back({{}, open.empty() ? "" : open.back().current_key, {}});
        break;
      case Event::object_end:
        open.pop_back();
        break;
      case Event::key: {
        std::string key = parsed.get<std::string>();
        if (!open.back().keys.insert(key).second && !doc.repeated)
          doc.repeated = RepeatedKey{depth, open.back().name, key};
        open.back().current_key = std::move(key);
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    doc.value = nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::exception& e) {
    doc.error = e.what();
  } catch (const TooDeep&) {
    doc.error = "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  }
  if (!doc.error.empty()) doc.repeated.reset();
  return doc;
}

}  // namespace wl::safetensors
