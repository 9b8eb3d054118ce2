#include "engine/shared_catalogue.hpp"

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

bool received_catalogue(const std::string& shared, const std::string& model) {
  return !shared.empty() && json::parse(shared).at("model").get<std::string>() == model;
}

LoaderChoice shared_choice(const std::string& shared) {
  const json j = json::parse(shared);
  LoaderChoice choice{j.at("loader").get<std::string>(), {}};
  for (const auto& [key, value] : j.at("kwargs").items()) choice.kwargs[key] = value.get<std::string>();
  return choice;
}

std::unique_ptr<WeightSource> shared_catalogue(const std::string& shared, std::shared_ptr<const Opener> opener) {
  return catalogue_from_value(json::parse(shared).at("catalogue").get<std::string>(), std::move(opener));
}

}  // namespace wl
