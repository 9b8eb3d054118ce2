#include "core/tensor_json.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

using json = nlohmann::json;

void bad_catalogue_value(const std::string& rule) {
  throw Error(ErrorCode::InvalidArgument, "not a catalogue value: " + rule, "<catalogue value>");
}

namespace {

DType dtype_of(const json& j) {
  const std::optional<DType> d = parse_dtype(j.get<std::string>());
  if (!d) bad_catalogue_value(fmt::format("unknown dtype {}", j.dump()));
  return *d;
}

}  // namespace

std::optional<json> tensor_json(const TensorInfo& t) {
  json j{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"offset", t.offset}, {"nbytes", t.nbytes}};
  j["file"] = t.source;
  if (t.aux_offset) j["aux_offset"] = t.aux_offset;
  if (!t.strides.empty()) j["strides"] = t.strides;
  if (!t.row_order.empty()) j["row_order"] = t.row_order;
  if (t.decoder) {
    const std::string spec = t.decoder->spec();
    if (spec.empty()) return std::nullopt;
    j["decoder"] = json::parse(spec);
  }
  if (!t.parts.empty()) {
    json parts = json::array();
    for (const TensorInfo& p : t.parts) {
      std::optional<json> part = tensor_json(p);
      if (!part) return std::nullopt;
      parts.push_back(std::move(*part));
    }
    j["parts"] = std::move(parts);
    j["parts_dim"] = t.parts_dim;
  }
  return j;
}

TensorInfo tensor_from_json(const json& j, size_t files, const DecoderFactory& decoders) {
  try {
    TensorInfo t;
    t.name = j.at("name").get<std::string>();
    t.dtype = dtype_of(j.at("dtype"));
    t.shape = j.at("shape").get<Shape>();
    const size_t file = j.at("file").get<size_t>();
    if (file >= files) bad_catalogue_value(fmt::format("tensor '{}' names file {} of {}", t.name, file, files));
    t.source = static_cast<SourceIndex>(file);
    t.offset = j.at("offset").get<uint64_t>();
    t.nbytes = j.at("nbytes").get<uint64_t>();
    t.aux_offset = j.value("aux_offset", uint64_t{0});
    if (j.contains("strides")) t.strides = j["strides"].get<std::vector<int64_t>>();
    if (j.contains("row_order")) t.row_order = j["row_order"].get<std::vector<uint64_t>>();
    if (j.contains("decoder")) t.decoder = decoders(j["decoder"]);
    if (j.contains("parts")) {
      for (const json& p : j["parts"]) t.parts.push_back(tensor_from_json(p, files, decoders));
      t.parts_dim = j.at("parts_dim").get<size_t>();
    }
    return t;
  } catch (const json::exception& e) {
    bad_catalogue_value(e.what());
  }
}

}  // namespace wl
