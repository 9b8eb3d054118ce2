#include "formats/quantized/dense_view.hpp"

#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/named_errors.hpp"
#include "core/tensor_json.hpp"
#include "formats/quantized/layer_kind.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

// The kind of layer `t` marks, with its prefix and extra: the first kind that marks it and that
// `config` makes; else the first that marks it (which the config then contradicts). Null: none marks it.
const LayerKind* kind_of(const WeightSource& raw, const TensorInfo& t, const QuantConfig& config, std::string& prefix, std::string& extra) {
  const LayerKind* first = nullptr;
  std::string first_prefix, first_extra;
  for (const LayerKind* k : layer_kinds()) {
    std::string p, e;
    if (!k->marks(raw, t, p, e)) continue;
    if (k->made_by(config)) {
      prefix = std::move(p), extra = std::move(e);
      return k;
    }
    if (!first) first = k, first_prefix = std::move(p), first_extra = std::move(e);
  }
  prefix = std::move(first_prefix), extra = std::move(first_extra);
  return first;
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
std::string layer_spec(const WeightSource& raw, const LayerKind& kind, const std::string& prefix, const std::string& extra,
                       const QuantConfig& c, const std::vector<std::string>& stored) {
  if (c.block_json.empty()) return {};  // a config made in code, not read from a file
  nlohmann::json tensors = nlohmann::json::array();
  for (const std::string& name : stored) {
    std::optional<nlohmann::json> t = tensor_json(raw.at(name));
    if (!t) return {};
    tensors.push_back(std::move(*t));
  }
  return nlohmann::json{{"kind", "quantized-layer"}, {"config", nlohmann::json::parse(c.block_json)}, {"origin", c.origin},
                        {"layer", kind.name}, {"prefix", prefix}, {"extra", extra}, {"format", raw.format()},
                        {"source", raw.origin()}, {"tensors", std::move(tensors)}}
      .dump();
}

// The layers' own checks name the tensor they refuse; its file is added here, from raw's catalogue.
QuantLayer specified_layer(const RawSource& raw, const LayerKind& kind, const std::string& prefix, const std::string& extra,
                           const QuantConfig& c) {
  QuantLayer layer;
  try {
    layer = kind.make(raw, prefix, extra, c);
  } catch (const Error& e) {
    const TensorInfo* refused = e.file().empty() ? raw->find(e.tensor()) : nullptr;
    if (!refused) throw;
    throw in_file(e, raw->file_of(*refused));
  }
  std::string spec = layer_spec(*raw, kind, prefix, extra, c, layer.stored);
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
    const LayerKind* kind = kind_of(*raw, t, config, prefix, extra);
    if (!kind) continue;
    if (!kind->made_by(config))
      throw Error(ErrorCode::QuantConfigInvalid,
                  fmt::format("{} says {}, but this tensor belongs to a {} layer", config.origin, config.method_name(), kind->name),
                  raw->file_of(t), t.name);
    layers.push_back(specified_layer(raw, *kind, prefix, extra, config));
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
  const LayerKind* kind = layer_kind(spec.at("layer").get<std::string>());
  if (!kind) bad_catalogue_value(fmt::format("layer kind {}", spec.at("layer").dump()));
  auto raw = std::make_shared<const WeightSource>(spec.at("format").get<std::string>(), spec.at("source").get<std::string>(),
                                                  Catalogue{files, std::move(tensors), {}}, opener);
  return specified_layer(raw, *kind, spec.at("prefix").get<std::string>(), spec.at("extra").get<std::string>(), config).dense.decoder;
}

}  // namespace wl::quant
