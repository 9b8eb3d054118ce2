// What rank 0 sends the other ranks after opening a checkpoint: the model, the loader it chose
// (detection's answer) and its catalogue as a value, so that they read no header. Text, empty when
// nothing is sent: the checkpoint is a model id (each node resolves its own hub cache) or a
// decoder has no spec (catalogue_value).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "weightloader/registry.hpp"
#include "weightloader/source.hpp"

namespace wl {

// `detected` is the loader choice before the caller's kwargs; `model` what was opened.
std::string share(const LoaderChoice& detected, const WeightSource& source, const std::string& model);
// What `shared` (share's text, or empty) carries for `model`: rank 0's loader choice and catalogue
// value (catalogue_from_value rebuilds it); nullopt when it carries none, or one of another model
// (ranks may be given copies at paths of their own: those read their own).
struct SharedCatalogue {
  LoaderChoice choice;
  std::string catalogue;
};
std::optional<SharedCatalogue> received_catalogue(const std::string& shared, const std::string& model);

}  // namespace wl
