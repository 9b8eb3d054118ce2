#include "loaders/catalogue_value.hpp"

#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/gguf/ggml_types.hpp"
#include "formats/llama2c/q8.hpp"
#include "formats/pytorch/byteswap.hpp"
#include "loaders/offset_decoder.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad_value(const std::string& rule) {
  throw Error(ErrorCode::InvalidArgument, "not a catalogue value: " + rule, "<catalogue value>");
}

DType dtype_of(const json& j) {
  const std::optional<DType> d = parse_dtype(j.get<std::string>());
  if (!d) bad_value(fmt::format("unknown dtype {}", j.dump()));
  return *d;
}

// nullopt when a decoder cannot be carried.
std::optional<json> tensor_value(const TensorInfo& t, std::vector<std::string>& files, std::unordered_map<std::string, size_t>& index) {
  json j{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"offset", t.offset}, {"nbytes", t.nbytes}};
  auto [it, added] = index.emplace(t.file, files.size());
  if (added) files.push_back(t.file);
  j["file"] = it->second;
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
      std::optional<json> part = tensor_value(p, files, index);
      if (!part) return std::nullopt;
      parts.push_back(std::move(*part));
    }
    j["parts"] = std::move(parts);
    j["parts_dim"] = t.parts_dim;
  }
  return j;
}

TensorInfo tensor_of(const json& j, const std::vector<std::string>& files) {
  TensorInfo t;
  t.name = j.at("name").get<std::string>();
  t.dtype = dtype_of(j.at("dtype"));
  t.shape = j.at("shape").get<Shape>();
  const size_t file = j.at("file").get<size_t>();
  if (file >= files.size()) bad_value(fmt::format("tensor '{}' names file {} of {}", t.name, file, files.size()));
  t.file = files[file];
  t.offset = j.at("offset").get<uint64_t>();
  t.nbytes = j.at("nbytes").get<uint64_t>();
  t.aux_offset = j.value("aux_offset", uint64_t{0});
  if (j.contains("strides")) t.strides = j["strides"].get<std::vector<int64_t>>();
  if (j.contains("row_order")) t.row_order = j["row_order"].get<std::vector<uint64_t>>();
  if (j.contains("decoder")) t.decoder = decoder_from_spec(j["decoder"].dump());
  if (j.contains("parts")) {
    for (const json& p : j["parts"]) t.parts.push_back(tensor_of(p, files));
    t.parts_dim = j.at("parts_dim").get<size_t>();
  }
  return t;
}

}  // namespace

std::optional<std::string> catalogue_value(const WeightSource& source) {
  std::vector<std::string> files;
  std::unordered_map<std::string, size_t> index;
  json tensors = json::array();
  for (const TensorInfo& t : source.tensors()) {
    std::optional<json> v = tensor_value(t, files, index);
    if (!v) return std::nullopt;
    tensors.push_back(std::move(*v));
  }
  const json value{{"format", source.format()}, {"origin", source.origin()}, {"metadata", source.metadata()}, {"files", files},
                   {"tensors", std::move(tensors)}};
  return value.dump();
}

std::unique_ptr<WeightSource> catalogue_from_value(const std::string& value, std::shared_ptr<const Opener> opener) {
  const json j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad_value("not a JSON object");
  try {
    const auto files = j.at("files").get<std::vector<std::string>>();
    std::vector<TensorInfo> tensors;
    for (const json& t : j.at("tensors")) tensors.push_back(tensor_of(t, files));
    return std::make_unique<WeightSource>(j.at("format").get<std::string>(), j.at("origin").get<std::string>(), std::move(tensors),
                                          j.at("metadata").get<std::map<std::string, std::string>>(), std::move(opener));
  } catch (const json::exception& e) {
    bad_value(e.what());
  }
}

std::shared_ptr<const Decoder> decoder_from_spec(const std::string& spec) {
  const json j = json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind")) bad_value(fmt::format("decoder spec {}", spec));
  try {
    const std::string kind = j["kind"].get<std::string>();
    if (kind == "ggml") {
      if (auto d = gguf::ggml_decoder(static_cast<GgmlType>(j.at("type").get<uint32_t>()))) return d;
    } else if (kind == "llama2c-q8") {
      const uint64_t group = j.at("group").get<uint64_t>();
      if (group > 0) return std::make_shared<llama2c::Q8Decoder>(group);
    } else if (kind == "big-endian") {
      return pytorch::big_endian_decoder(dtype_of(j.at("dtype")));
    } else if (kind == "offset") {
      const json& inner = j.at("inner");
      return offset_decoder(inner.is_null() ? nullptr : decoder_from_spec(inner.dump()), dtype_of(j.at("stored")), j.at("offset").get<float>());
    }
  } catch (const json::exception& e) {
    bad_value(fmt::format("decoder spec {}: {}", spec, e.what()));
  }
  bad_value(fmt::format("decoder spec {}: no such decoder in this build", spec));
}

}  // namespace wl
