#include "formats/quantized/dense_view.hpp"

#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/named_errors.hpp"
#include "core/tensor_json.hpp"
#include "formats/quantized/bnb.hpp"
#include "formats/quantized/fp4_packed.hpp"
#include "formats/quantized/fp8.hpp"
#include "formats/quantized/mxfp4.hpp"
#include "formats/quantized/pack_quantized.hpp"
#include "formats/quantized/packed_int.hpp"
#include "formats/quantized/sparse_bitmask.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

bool strip_suffix(const std::string& name, std::string_view suffix, std::string& prefix) {
  if (!name.ends_with(suffix)) return false;
  prefix = name.substr(0, name.size() - suffix.size());
  return true;
}

// What each tensor name says about its layer's method, whatever the config says.
enum class Seen { None, PackedInt, Bnb4, Bnb8, Fp8, CtPacked, CtInt8, CtSparse, Mxfp4 };

Seen seen_in(const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string& extra) {
  if (strip_suffix(t.name, ".qweight", prefix)) return Seen::PackedInt;
  if (const size_t at = t.name.find(".weight.quant_state.bitsandbytes__"); at != std::string::npos) {
    prefix = t.name.substr(0, at), extra = t.name;
    return Seen::Bnb4;
  }
  if (strip_suffix(t.name, ".SCB", prefix)) return Seen::Bnb8;
  if (strip_suffix(t.name, ".weight_packed", prefix)) return Seen::CtPacked;
  if (strip_suffix(t.name, "_blocks", prefix) && raw.find(prefix + "_scales")) return Seen::Mxfp4;
  // A sparse layer's tensors hang off `<prefix>.weight` or, since compressed-tensors' #219, `<prefix>`.
  if (strip_suffix(t.name, ".bitmask", extra) && raw.find(extra + ".compressed")) {
    if (!strip_suffix(extra, ".weight", prefix)) prefix = extra;
    return Seen::CtSparse;
  }
  for (const char* suffix : {".weight_scale_inv", ".weight_scale"})
    if (strip_suffix(t.name, suffix, prefix)) {
      const TensorInfo* w = raw.find(prefix + ".weight");
      if (w && w->dtype == DType::F8_E4M3) {
        extra = t.name;
        return Seen::Fp8;
      }
      if (w && w->dtype == DType::I8 && t.name.ends_with(".weight_scale")) return Seen::CtInt8;
    }
  return Seen::None;
}

const char* seen_name(Seen s) {
  switch (s) {
    case Seen::PackedInt: return "GPTQ/AWQ (qweight)";
    case Seen::Bnb4: return "bitsandbytes 4-bit (quant_state)";
    case Seen::Bnb8: return "bitsandbytes int8 (SCB)";
    case Seen::Fp8: return "FP8 (F8_E4M3 weight with a scale)";
    case Seen::CtPacked: return "compressed-tensors pack-quantized (weight_packed)";
    case Seen::CtInt8: return "compressed-tensors naive/int-quantized (I8 weight with weight_scale)";
    case Seen::CtSparse: return "compressed-tensors sparse (bitmask)";
    case Seen::Mxfp4: return "MXFP4 (_blocks with _scales)";
    case Seen::None: break;
  }
  return "dense";
}

bool config_expects(const QuantConfig& c, Seen s) {
  switch (c.method) {
    case Method::Gptq:
    case Method::Awq: return s == Seen::PackedInt;
    case Method::Bnb4: return s == Seen::Bnb4;
    case Method::Bnb8: return s == Seen::Bnb8;
    case Method::Fp8: return s == Seen::Fp8;
    case Method::CompressedTensors:
      return s == Seen::Fp8 || s == Seen::CtPacked || s == Seen::CtInt8 || (s == Seen::CtSparse && !c.ct_sparsity.empty());
    case Method::Mxfp4: return s == Seen::Mxfp4;
  }
  return false;
}

QuantLayer make_layer(const std::shared_ptr<const WeightSource>& raw, Seen seen, const std::string& prefix, const std::string& extra,
                      const QuantConfig& c, const TensorInfo& t) {
  switch (seen) {
    case Seen::PackedInt: return c.method == Method::Gptq ? gptq_layer(raw, prefix, c) : awq_layer(raw, prefix, c);
    case Seen::Bnb4: return bnb4_layer(raw, prefix, extra, c);
    case Seen::Bnb8: return bnb8_layer(raw, prefix, c);
    case Seen::Fp8: return fp8_layer(raw, prefix, extra, c);
    case Seen::CtPacked:
      return c.ct_format.ends_with("fp4-pack-quantized") ? fp4_packed_layer(raw, prefix, c) : pack_quantized_layer(raw, prefix, c);
    case Seen::CtInt8: return naive_quantized_layer(raw, prefix, c);
    case Seen::Mxfp4: return mxfp4_layer(raw, prefix);
    case Seen::CtSparse:
      if (c.ct_sparsity == "sparse-bitmask" || c.ct_sparsity == "sparse-24-bitmask") return sparse_layer(raw, prefix, extra, c);
      throw Error(ErrorCode::QuantUnsupported,
                  fmt::format("compressed-tensors '{}' sparsity is not decoded (sparse-bitmask and sparse-24-bitmask are)", c.ct_sparsity),
                  raw->file_of(t), t.name);
    case Seen::None: break;
  }
  throw Error(ErrorCode::QuantUnsupported, fmt::format("{} layers are not decoded yet", seen_name(seen)), raw->file_of(t), t.name);
}

// A layer's decoder with the spec that rebuilds it (the layer's config and stored tensors).
class SpecifiedDecoder final : public Decoder {
 public:
  SpecifiedDecoder(std::shared_ptr<const Decoder> inner, std::string spec) : inner_(std::move(inner)), spec_(std::move(spec)) {}
  std::string name() const override { return inner_->name(); }
  std::string spec() const override { return spec_; }
  uint64_t block_elems() const override { return inner_->block_elems(); }
  uint64_t block_bytes() const override { return inner_->block_bytes(); }
  DType output_dtype() const override { return inner_->output_dtype(); }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override { inner_->decode(src, nblocks, dst); }
  uint64_t aux_block_bytes() const override { return inner_->aux_block_bytes(); }
  std::span<const SideRead> side_reads() const override { return inner_->side_reads(); }
  bool prepared() const override { return inner_->prepared(); }
  void prepare(std::span<const TensorView> side) const override { inner_->prepare(side); }
  bool decodes_as(DType dtype) const override { return inner_->decodes_as(dtype); }
  void decode_as(DType dtype, const std::byte* src, uint64_t nblocks, void* dst) const override {
    inner_->decode_as(dtype, src, nblocks, dst);
  }

 private:
  std::shared_ptr<const Decoder> inner_;
  std::string spec_;
};

// What make_layer was given, with the layer's stored tensors (their files by index into raw's, which
// the catalogue the decoder is in keeps); empty when one cannot be carried.
std::string layer_spec(const WeightSource& raw, Seen seen, const std::string& prefix, const std::string& extra, const QuantConfig& c,
                       const std::vector<std::string>& stored) {
  if (c.block_json.empty()) return {};  // a config made in code, not read from a file
  nlohmann::json tensors = nlohmann::json::array();
  for (const std::string& name : stored) {
    std::optional<nlohmann::json> t = tensor_json(raw.at(name));
    if (!t) return {};
    tensors.push_back(std::move(*t));
  }
  return nlohmann::json{{"kind", "quantized-layer"}, {"config", nlohmann::json::parse(c.block_json)}, {"origin", c.origin},
                        {"seen", static_cast<int>(seen)}, {"prefix", prefix}, {"extra", extra}, {"format", raw.format()},
                        {"source", raw.origin()}, {"tensors", std::move(tensors)}}
      .dump();
}

// The layers' own checks name the tensor they refuse; its file is added here, from raw's catalogue.
QuantLayer specified_layer(const std::shared_ptr<const WeightSource>& raw, Seen seen, const std::string& prefix, const std::string& extra,
                           const QuantConfig& c, const TensorInfo& t) {
  QuantLayer layer;
  try {
    layer = make_layer(raw, seen, prefix, extra, c, t);
  } catch (const Error& e) {
    const TensorInfo* refused = e.file().empty() ? raw->find(e.tensor()) : nullptr;
    if (!refused) throw;
    throw in_file(e, raw->file_of(*refused));
  }
  std::string spec = layer_spec(*raw, seen, prefix, extra, c, layer.stored);
  if (!spec.empty()) layer.dense.decoder = std::make_shared<SpecifiedDecoder>(layer.dense.decoder, std::move(spec));
  return layer;
}

std::string human_bytes(uint64_t bytes) {
  return bytes >= (1ull << 30) ? fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30))
                               : fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1ull << 20));
}

}  // namespace

std::unique_ptr<WeightSource> dense_view(std::shared_ptr<const WeightSource> raw, const QuantConfig& config, bool require_layers) {
  std::vector<QuantLayer> layers;
  std::unordered_map<std::string, size_t> layer_of_stored;
  for (const TensorInfo& t : raw->tensors()) {
    std::string prefix, extra;
    const Seen seen = seen_in(*raw, t, prefix, extra);
    if (seen == Seen::None) continue;
    if (!config_expects(config, seen))
      throw Error(ErrorCode::QuantConfigInvalid,
                  fmt::format("{} says {}, but this tensor belongs to a {} layer", config.origin, config.method_name(), seen_name(seen)),
                  raw->file_of(t), t.name);
    layers.push_back(specified_layer(raw, seen, prefix, extra, config, t));
    for (const std::string& s : layers.back().stored) layer_of_stored.emplace(s, layers.size() - 1);
  }
  if (layers.empty() && (!require_layers || config.stored_dense())) return raw->with_metadata(raw->metadata());
  if (layers.empty())
    throw Error(ErrorCode::QuantConfigInvalid,
                fmt::format("{} says {}, but no tensor of the checkpoint is quantized that way", config.origin, config.method_name()),
                raw->origin());
  // Each dense weight takes the place of its layer's first stored tensor; the others disappear.
  std::vector<TensorInfo> tensors;
  std::set<size_t> placed;
  uint64_t dense_elems = 0, stored_bytes = 0;
  for (const TensorInfo& t : raw->tensors()) {
    stored_bytes += t.nbytes;
    auto it = layer_of_stored.find(t.name);
    if (it == layer_of_stored.end()) {
      dense_elems += t.numel();
      tensors.push_back(t);
    } else if (placed.insert(it->second).second) {
      dense_elems += layers[it->second].dense.numel();
      tensors.push_back(layers[it->second].dense);
    }
  }
  std::map<std::string, std::string> metadata = raw->metadata();
  // The view is dense: its config.json says so, so that a conversion of it is not read as quantized.
  if (auto it = metadata.find("config.json"); it != metadata.end()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(it->second, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.erase("quantization_config")) it->second = j.dump(2);
  }
  metadata["quantization"] =
      fmt::format("{}; {} layers dequantized on read (packed {}); dense size {} at 16 bits ({} parameters)", config.describe(),
                  layers.size(), human_bytes(stored_bytes), human_bytes(dense_elems * 2), dense_elems);
  return std::make_unique<WeightSource>(raw->format(), raw->origin(), Catalogue{raw->files(), std::move(tensors), std::move(metadata)},
                                        raw->opener());
}

std::shared_ptr<const Decoder> layer_decoder_from_spec(const nlohmann::json& spec, const std::shared_ptr<const Opener>& opener,
                                                       const std::vector<std::string>& files) {
  std::vector<TensorInfo> tensors;
  for (const nlohmann::json& t : spec.at("tensors"))
    tensors.push_back(tensor_from_json(t, files.size(), [](const nlohmann::json& d) -> std::shared_ptr<const Decoder> {
      bad_catalogue_value("a quantized layer's stored tensor with a decoder " + d.dump());
    }));
  if (tensors.empty()) bad_catalogue_value("a quantized layer without tensors");
  const std::string origin = spec.at("origin").get<std::string>();
  const QuantConfig config = parse_quant_config(spec.at("config"), origin);
  const int seen = spec.at("seen").get<int>();
  if (seen <= static_cast<int>(Seen::None) || seen > static_cast<int>(Seen::Mxfp4)) bad_catalogue_value(fmt::format("layer kind {}", seen));
  auto raw = std::make_shared<const WeightSource>(spec.at("format").get<std::string>(), spec.at("source").get<std::string>(),
                                                  Catalogue{files, std::move(tensors), {}}, opener);
  return specified_layer(raw, static_cast<Seen>(seen), spec.at("prefix").get<std::string>(), spec.at("extra").get<std::string>(), config,
                         raw->tensors().front())
      .dense.decoder;
}

}  // namespace wl::quant
