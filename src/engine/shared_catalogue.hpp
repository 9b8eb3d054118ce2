// What rank 0 sends the other ranks after opening a checkpoint: the model, the loader it chose
// (detection's answer) and its catalogue as a value, so that they read no header. Text, empty when
// nothing is sent: the checkpoint is a model id (each node resolves its own hub cache) or a
// decoder has no spec (catalogue_value).
#pragma once

#include <memory>
#include <string>

#include "weightloader/registry.hpp"
#include "weightloader/source.hpp"

namespace wl {

// `detected` is the loader choice before the caller's kwargs; `model` what was opened.
std::string share(const LoaderChoice& detected, const WeightSource& source, const std::string& model);
// Whether `shared` (share's text, or empty) carries a catalogue of `model` (ranks may be given
// copies at paths of their own: those read their own).
bool received_catalogue(const std::string& shared, const std::string& model);
LoaderChoice shared_choice(const std::string& shared);
// The catalogue, its bytes read through `opener`.
std::unique_ptr<WeightSource> shared_catalogue(const std::string& shared, std::shared_ptr<const Opener> opener);

}  // namespace wl
