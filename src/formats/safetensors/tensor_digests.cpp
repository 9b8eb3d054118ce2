// The per-tensor sha256 digests write_safetensors(record_digests) keeps in each file's __metadata__.
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {

std::map<std::string, std::string> recorded_tensor_digests(const WeightSource& source) {
  if (source.format() != "safetensors") return {};
  std::map<std::string, SourceIndex> files;  // the files its tensors are in, by name
  for (const TensorInfo& t : source.tensors()) files.emplace(source.file_of(t), t.source);
  std::map<std::string, std::string> digests;
  for (const auto& [file, index] : files) {
    const SafetensorsHeader header = read_stated_safetensors_header(*source.file(index));
    if (!header.metadata) continue;
    const auto recorded = header.metadata->find(kTensorDigestsKey);
    if (recorded == header.metadata->end()) continue;
    const nlohmann::json j = nlohmann::json::parse(recorded->second, nullptr, false);
    if (!j.is_object())
      throw Error(ErrorCode::InvalidMetadata, fmt::format("{} is not a JSON object of tensor names", kTensorDigestsKey), file);
    for (const auto& [name, hex] : j.items()) {
      if (!hex.is_string() || hex.get<std::string>().size() != 64)
        throw Error(ErrorCode::InvalidMetadata, fmt::format("{}: not a sha256 in hex", kTensorDigestsKey), file, name);
      digests[name] = hex.get<std::string>();
    }
  }
  return digests;
}

}  // namespace wl
