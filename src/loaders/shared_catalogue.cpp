#include "loaders/shared_catalogue.hpp"

#include <nlohmann/json.hpp>

#include "loaders/catalogue_value.hpp"

namespace wl {

using json = nlohmann::json;

std::string share(const LoaderChoice& detected, const WeightSource& source, const std::string& model) {
  // A model id resolved to this node's hub cache: another node may have to download it itself.
  if (detected.name == "hf" && source.origin() != model) return {};
  const std::optional<std::string> catalogue = catalogue_value(source);
  if (!catalogue) return {};
  json kwargs = json::object();
  for (const auto& [key, value] : detected.kwargs)
    if (const auto* s = std::get_if<std::string>(&value)) kwargs[key] = *s;  // detection sets only strings
  return json{{"model", model}, {"loader", detected.name}, {"kwargs", kwargs}, {"catalogue", *catalogue}}.dump();
}

std::optional<SharedCatalogue> received_catalogue(const std::string& shared, const std::string& model) {
  if (shared.empty()) return std::nullopt;
  const json j = json::parse(shared);
  if (j.at("model").get<std::string>() != model) return std::nullopt;
  SharedCatalogue out{{j.at("loader").get<std::string>(), {}}, j.at("catalogue").get<std::string>()};
  for (const auto& [key, value] : j.at("kwargs").items()) out.choice.kwargs[key] = value.get<std::string>();
  return out;
}

}  // namespace wl
