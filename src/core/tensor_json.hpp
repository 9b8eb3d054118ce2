// TensorInfo as JSON, for catalogues sent as values: files as their indices into the catalogue's
// files (TensorInfo::source, as they are), decoders as their spec (Decoder::spec), rebuilt by the
// caller's factory.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "weightloader/source.hpp"

namespace wl {

// nullopt when the tensor (or a part of it) has a decoder without a spec.
std::optional<nlohmann::json> tensor_json(const TensorInfo& t);

using DecoderFactory = std::function<std::shared_ptr<const Decoder>(const nlohmann::json& spec)>;

// InvalidArgument ("not a catalogue value: ...") for JSON that tensor_json did not write, or that
// names a file index of `files` or more (the catalogue's count of files).
TensorInfo tensor_from_json(const nlohmann::json& j, size_t files, const DecoderFactory& decoders);
[[noreturn]] void bad_catalogue_value(const std::string& rule);

}  // namespace wl
