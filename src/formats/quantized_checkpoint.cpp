// A Hugging Face checkpoint's quantization method, found in its config.json or a file beside it,
// and the dense view (or the packed tensors, described) that follows from it.
#include "formats/quantized_checkpoint.hpp"

#include <nlohmann/json.hpp>

#include "formats/quantized/dense_view.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

std::optional<quant::QuantConfig> config_beside(const WeightSource& source, const Opener& files) {
  const std::string dir = files.is_directory(source.origin()) ? source.origin() : files.parent(source.origin());
  for (const char* name : {"quantization_config.json", "quantize_config.json", "hf_quant_config.json"}) {
    const std::string path = files.join(dir, name);
    if (!files.exists(path) || files.is_directory(path)) continue;
    const std::shared_ptr<ByteSource> file = files.open(path);
    const nlohmann::json j = nlohmann::json::parse(file->read_string(0, file->size()), nullptr, false);
    if (j.is_discarded()) throw Error(ErrorCode::QuantConfigInvalid, "not JSON", path);
    return quant::parse_quant_config(j, path);
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<WeightSource> dequantized_source(std::unique_ptr<WeightSource> source, const Opener& files, bool as_stored) {
  std::optional<quant::QuantConfig> config;
  if (auto it = source->metadata().find("config.json"); it != source->metadata().end())
    config = quant::quant_config_of_config_json(it->second, source->origin() + " (config.json)");
  // A config.json that says quantized must describe the weights; a file beside them may describe
  // only some (a dense export kept next to the quantized one).
  const bool from_config_json = config.has_value();
  if (!config) config = config_beside(*source, files);
  if (!config) return source;
  if (as_stored) {
    std::map<std::string, std::string> metadata = source->metadata();
    metadata["quantization"] = config->describe() + "; as stored (packed tensors)";
    metadata["quantization_config"] = config->block_json;  // what packed_shard() reads
    return source->with_metadata(std::move(metadata));
  }
  return quant::dense_view(std::shared_ptr<const WeightSource>(std::move(source)), *config, from_config_json);
}

}  // namespace wl
