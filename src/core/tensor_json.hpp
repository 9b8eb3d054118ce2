// TensorInfo as JSON, for catalogues sent as values: files as indices into a list the caller
// keeps, decoders as their spec (Decoder::spec), rebuilt by the caller's factory.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "weightloader/source.hpp"

namespace wl {

// File names in order of first use, each once.
struct FileList {
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> index;
  size_t add(const std::string& name);
};

// nullopt when the tensor (or a part of it) has a decoder without a spec.
std::optional<nlohmann::json> tensor_json(const TensorInfo& t, FileList& files);

using DecoderFactory = std::function<std::shared_ptr<const Decoder>(const nlohmann::json& spec)>;

// InvalidArgument ("not a catalogue value: ...") for JSON that tensor_json did not write.
TensorInfo tensor_from_json(const nlohmann::json& j, const std::vector<std::string>& files, const DecoderFactory& decoders);
[[noreturn]] void bad_catalogue_value(const std::string& rule);

}  // namespace wl
