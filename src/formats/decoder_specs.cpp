// Decoders made again from their specs (Decoder::spec(): {"kind": ..., parameters}), as a
// catalogue value carries them to other ranks: one entry per kind, next to the formats that
// make them.
#include "formats/decoder_specs.hpp"

#include <functional>
#include <map>

#include <fmt/format.h>

#include "core/tensor_json.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "formats/llama2c/q8.hpp"
#include "formats/offset_decoder.hpp"
#include "formats/pytorch/byteswap.hpp"
#include "formats/quantized/dense_view.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/dtype.hpp"

namespace wl {

namespace {

using json = nlohmann::json;
// The decoder of one kind from its parameters; null when they are out of range.
using SpecFactory = std::function<std::shared_ptr<const Decoder>(const json& spec, const std::shared_ptr<const Opener>& opener,
                                                                  const std::vector<std::string>& files)>;

std::shared_ptr<const Decoder> ggml_from_spec(const json& j, const std::shared_ptr<const Opener>&, const std::vector<std::string>&) {
  const auto type = static_cast<GgmlType>(j.at("type").get<uint32_t>());
  if (auto d = gguf::ggml_decoder(type)) return d;
  if (const auto refused = j.find("refused"); refused != j.end())  // listed, but reading it is refused
    return gguf::ggml_refusing_decoder(type, refused->at("file").get<std::string>(), refused->at("tensor").get<std::string>());
  return nullptr;
}

std::shared_ptr<const Decoder> llama2c_q8_from_spec(const json& j, const std::shared_ptr<const Opener>&, const std::vector<std::string>&) {
  const uint64_t group = j.at("group").get<uint64_t>();
  return group > 0 ? std::make_shared<llama2c::Q8Decoder>(group) : nullptr;
}

std::shared_ptr<const Decoder> big_endian_from_spec(const json& j, const std::shared_ptr<const Opener>&, const std::vector<std::string>&) {
  const std::optional<DType> d = parse_dtype(j.at("dtype").get<std::string>());
  return d ? pytorch::big_endian_decoder(*d) : nullptr;
}

std::shared_ptr<const Decoder> offset_from_spec(const json& j, const std::shared_ptr<const Opener>& opener,
                                                const std::vector<std::string>& files) {
  const json& inner = j.at("inner");
  const std::optional<DType> d = parse_dtype(j.at("stored").get<std::string>());
  if (!d) return nullptr;
  return offset_decoder(inner.is_null() ? nullptr : decoder_from_spec(inner.dump(), opener, files), *d, j.at("offset").get<float>());
}

std::shared_ptr<const Decoder> subbyte_float_from_spec(const json& j, const std::shared_ptr<const Opener>&, const std::vector<std::string>&) {
  return safetensors_subbyte_decoder(j.at("dtype").get<std::string>());
}

const std::map<std::string, SpecFactory> kinds = {
    {"ggml", ggml_from_spec},
    {"llama2c-q8", llama2c_q8_from_spec},
    {"big-endian", big_endian_from_spec},
    {"offset", offset_from_spec},
    {"quantized-layer", quant::layer_decoder_from_spec},
    {"subbyte-float", subbyte_float_from_spec},
};

}  // namespace

std::shared_ptr<const Decoder> decoder_from_spec(const std::string& spec, const std::shared_ptr<const Opener>& opener,
                                                 const std::vector<std::string>& files) {
  const json j = json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind")) bad_catalogue_value(fmt::format("decoder spec {}", spec));
  try {
    const auto found = kinds.find(j["kind"].get<std::string>());
    if (found != kinds.end())
      if (auto d = found->second(j, opener, files)) return d;
  } catch (const json::exception& e) {
    bad_catalogue_value(fmt::format("decoder spec {}: {}", spec, e.what()));
  }
  bad_catalogue_value(fmt::format("decoder spec {}: no such decoder in this build", spec));
}

}  // namespace wl
