// A checkpoint's catalogue as one value: what one rank read from the headers, sent to the others so
// that they open only the bytes they need. Files are indices into the value's list of names;
// decoders are (registered kind, parameters) as Decoder::spec() gives them
// (formats/decoder_specs.hpp makes them again).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "weightloader/source.hpp"

namespace wl {

// The value (JSON text): format, origin, metadata, files and every tensor. nullopt when a decoder
// has no spec.
std::optional<std::string> catalogue_value(const WeightSource& source);

// The catalogue again, its bytes read through `opener`; building it reads and opens nothing.
// InvalidArgument naming the rule for a value this build did not write (or a decoder kind it lacks).
std::unique_ptr<WeightSource> catalogue_from_value(const std::string& value, std::shared_ptr<const Opener> opener);

}  // namespace wl
