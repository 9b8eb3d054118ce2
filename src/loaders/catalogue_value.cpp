#include "loaders/catalogue_value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/tensor_json.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "formats/llama2c/q8.hpp"
#include "formats/pytorch/byteswap.hpp"
#include "formats/quantized/dense_view.hpp"
#include "loaders/offset_decoder.hpp"
#include "weightloader/error.hpp"

namespace wl {

using json = nlohmann::json;

std::optional<std::string> catalogue_value(const WeightSource& source) {
  FileList files;
  json tensors = json::array();
  for (const TensorInfo& t : source.tensors()) {
    std::optional<json> v = tensor_json(t, files);
    if (!v) return std::nullopt;
    tensors.push_back(std::move(*v));
  }
  // Each file's size and version as opened here (opened once: no new request), so that the
  // receivers open them without asking again (a remote object's HEAD).
  json sources = json::array();
  for (const std::string& name : files.names) {
    const std::shared_ptr<ByteSource> s = source.file(name);
    sources.push_back({s->size(), s->version()});
  }
  const json value{{"format", source.format()}, {"origin", source.origin()}, {"metadata", source.metadata()}, {"files", files.names},
                   {"sources", std::move(sources)}, {"tensors", std::move(tensors)}};
  return value.dump();
}

std::unique_ptr<WeightSource> catalogue_from_value(const std::string& value, std::shared_ptr<const Opener> opener) {
  const json j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad_catalogue_value("not a JSON object");
  // One open per file, shared with the quantized layers' own sources.
  if (!dynamic_cast<const CachingOpener*>(opener.get())) opener = std::make_shared<CachingOpener>(std::move(opener));
  try {
    const auto files = j.at("files").get<std::vector<std::string>>();
    // Opened as the sender found them: no request to open a remote object, reads pinned to its ETag.
    if (j.contains("sources")) {
      const json& sources = j.at("sources");
      if (!sources.is_array() || sources.size() != files.size()) bad_catalogue_value("sources do not match files");
      const auto& session = static_cast<const CachingOpener&>(*opener);
      for (size_t i = 0; i < files.size(); ++i)
        session.expect(files[i], sources[i].at(0).get<uint64_t>(), sources[i].at(1).get<std::string>());
    }
    const DecoderFactory decoders = [&](const json& spec) { return decoder_from_spec(spec.dump(), opener); };
    std::vector<TensorInfo> tensors;
    for (const json& t : j.at("tensors")) tensors.push_back(tensor_from_json(t, files, decoders));
    return std::make_unique<WeightSource>(j.at("format").get<std::string>(), j.at("origin").get<std::string>(), std::move(tensors),
                                          j.at("metadata").get<std::map<std::string, std::string>>(), std::move(opener));
  } catch (const json::exception& e) {
    bad_catalogue_value(e.what());
  }
}

std::shared_ptr<const Decoder> decoder_from_spec(const std::string& spec, const std::shared_ptr<const Opener>& opener) {
  const json j = json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind")) bad_catalogue_value(fmt::format("decoder spec {}", spec));
  try {
    const std::string kind = j["kind"].get<std::string>();
    if (kind == "ggml") {
      const auto type = static_cast<GgmlType>(j.at("type").get<uint32_t>());
      if (auto d = gguf::ggml_decoder(type)) return d;
      if (const auto refused = j.find("refused"); refused != j.end())  // listed, but reading it is refused
        if (auto d = gguf::ggml_refusing_decoder(type, refused->at("file").get<std::string>(),
                                                 refused->at("tensor").get<std::string>()))
          return d;
    } else if (kind == "llama2c-q8") {
      const uint64_t group = j.at("group").get<uint64_t>();
      if (group > 0) return std::make_shared<llama2c::Q8Decoder>(group);
    } else if (kind == "big-endian") {
      if (const std::optional<DType> d = parse_dtype(j.at("dtype").get<std::string>())) return pytorch::big_endian_decoder(*d);
    } else if (kind == "offset") {
      const json& inner = j.at("inner");
      if (const std::optional<DType> d = parse_dtype(j.at("stored").get<std::string>()))
        return offset_decoder(inner.is_null() ? nullptr : decoder_from_spec(inner.dump(), opener), *d, j.at("offset").get<float>());
    } else if (kind == "quantized-layer") {
      return quant::layer_decoder_from_spec(j, opener);
    }
  } catch (const json::exception& e) {
    bad_catalogue_value(fmt::format("decoder spec {}: {}", spec, e.what()));
  }
  bad_catalogue_value(fmt::format("decoder spec {}: no such decoder in this build", spec));
}

}  // namespace wl
