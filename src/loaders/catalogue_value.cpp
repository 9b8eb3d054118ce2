#include "loaders/catalogue_value.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/tensor_json.hpp"
#include "formats/decoder_specs.hpp"
#include "weightloader/error.hpp"

namespace wl {

using json = nlohmann::json;

std::optional<std::string> catalogue_value(const WeightSource& source) {
  json tensors = json::array();
  for (const TensorInfo& t : source.tensors()) {
    std::optional<json> v = tensor_json(t);
    if (!v) return std::nullopt;
    tensors.push_back(std::move(*v));
  }
  // Each file's size and version as opened here (opened once: no new request), so that the
  // receivers open them without asking again (a remote object's HEAD).
  json sources = json::array();
  for (SourceIndex i = 0; i < source.files().size(); ++i) {
    const std::shared_ptr<ByteSource> s = source.file(i);
    sources.push_back({s->size(), s->version()});
  }
  const json value{{"format", source.format()}, {"origin", source.origin()}, {"metadata", source.metadata()}, {"files", source.files()},
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
    const DecoderFactory decoders = [&](const json& spec) { return decoder_from_spec(spec.dump(), opener, files); };
    Catalogue c{files, {}, j.at("metadata").get<std::map<std::string, std::string>>()};
    for (const json& t : j.at("tensors")) c.tensors.push_back(tensor_from_json(t, files.size(), decoders));
    return std::make_unique<WeightSource>(j.at("format").get<std::string>(), j.at("origin").get<std::string>(), std::move(c),
                                          std::move(opener));
  } catch (const json::exception& e) {
    bad_catalogue_value(e.what());
  }
}

}  // namespace wl
