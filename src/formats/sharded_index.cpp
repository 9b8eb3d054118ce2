// Sharded checkpoints of any single-file format: an index.json (model.safetensors.index.json,
// pytorch_model.bin.index.json) and the files its weight_map names.
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "formats/safetensors/json_doc.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

// A weight_map value as a path inside the model directory. Anything that could reach outside it
// (an absolute path, a ".." component) is refused before any file is opened.
fs::path shard_path(const std::string& value, const std::string& tensor, const std::string& index_path) {
  const auto invalid = [&](const char* why) {
    return Error(ErrorCode::IndexInvalid, fmt::format("weight_map file \"{}\" {}", value, why), index_path, tensor);
  };
  if (value.empty() || value.find('\0') != std::string::npos) throw invalid("is not a file name");
  const fs::path path(value);
  if (path.is_absolute() || path.has_root_directory() || path.has_root_name())
    throw invalid("is absolute; shards must lie in the index's directory");
  for (const fs::path& part : path)
    if (part == "..") throw invalid("contains \"..\"; shards must lie in the index's directory");
  const fs::path normal = path.lexically_normal();
  if (!normal.has_filename() || normal == ".") throw invalid("is not a file name");
  return normal;
}

std::string scalar_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The index's JSON, checked: what each tensor's listed file is, and the tensors listed per file
// (files in name order).
struct WeightMap {
  safetensors::JsonDocument doc;
  std::unordered_map<std::string, std::string> listed;
  std::map<std::string, std::vector<std::string>> files;
};

WeightMap parse_weight_map(const std::string& text, const std::string& index_json_path) {
  WeightMap map{safetensors::parse_json_document(text), {}, {}};
  const safetensors::JsonDocument& doc = map.doc;
  if (!doc.error.empty()) throw Error(ErrorCode::IndexInvalid, "not JSON: " + doc.error, index_json_path);
  if (!doc.value.is_object())
    throw Error(ErrorCode::IndexInvalid, fmt::format("the index is JSON {}, not an object", doc.value.type_name()),
                index_json_path);
  if (doc.repeated && doc.repeated->depth == 1)
    throw Error(ErrorCode::IndexInvalid, fmt::format("key \"{}\" given twice", doc.repeated->key), index_json_path);
  if (doc.repeated && doc.repeated->depth == 2 && doc.repeated->parent == "weight_map")
    throw Error(ErrorCode::IndexInvalid, "tensor listed twice in weight_map", index_json_path, doc.repeated->key);
  const auto map_it = doc.value.find("weight_map");
  if (map_it == doc.value.end() || !map_it->is_object())
    throw Error(ErrorCode::IndexInvalid, "no \"weight_map\" object mapping tensor names to files", index_json_path);
  for (const auto& [tensor, value] : map_it->items()) {
    if (!value.is_string())
      throw Error(ErrorCode::IndexInvalid, fmt::format("weight_map value is {}, not a file name", value.dump()),
                  index_json_path, tensor);
    const std::string file = shard_path(value.get<std::string>(), tensor, index_json_path).string();
    map.listed.emplace(tensor, file);
    map.files[file].push_back(tensor);
  }
  return map;
}

}  // namespace

std::vector<std::string> sharded_index_files(const std::string& index_text, const std::string& index_name) {
  std::vector<std::string> names;
  for (const auto& [file, tensors] : parse_weight_map(index_text, index_name).files) names.push_back(file);
  return names;
}

Catalogue read_sharded_catalogue(const Opener& opener, const std::string& index_json_path, const FileFormat& format) {
  const std::shared_ptr<ByteSource> index_file = opener.open(index_json_path);
  WeightMap map = parse_weight_map(index_file->read_string(0, index_file->size()), index_json_path);
  const safetensors::JsonDocument& doc = map.doc;
  const auto& listed = map.listed;
  const auto& files = map.files;

  Catalogue merged;
  if (const auto meta = doc.value.find("metadata"); meta != doc.value.end() && meta->is_object())
    for (const auto& [key, value] : meta->items())
      if (value.is_primitive()) merged.metadata.emplace(key, scalar_text(value));

  // Every listed shard's catalogue first, so that the checks below see the whole checkpoint.
  const std::string dir = opener.parent(index_json_path);
  std::vector<std::pair<std::string, Catalogue>> shards;
  for (const auto& [file, tensors] : files) {
    const std::string full = opener.join(dir, file);
    if (!opener.exists(full))
      throw Error(ErrorCode::IndexFileMissing,
                  fmt::format("shard \"{}\" ({}) does not exist; the index lists {} tensor(s) in it", file, full,
                              tensors.size()),
                  index_json_path, tensors.front());
    shards.emplace_back(file, format.read_catalogue(*opener.open(full), opener));
  }

  std::map<std::string, std::string> found;  // tensor name → the shard that holds it
  for (const auto& [file, shard] : shards)
    for (const TensorInfo& info : shard.tensors)
      if (const auto [it, fresh] = found.emplace(info.name, file); !fresh)
        throw Error(ErrorCode::TensorInTwoFiles, fmt::format("present in both \"{}\" and \"{}\"", it->second, file),
                    index_json_path, info.name);
  for (const auto& [tensor, file] : found) {
    const auto entry = listed.find(tensor);
    if (entry == listed.end())
      throw Error(ErrorCode::IndexTensorUnlisted,
                  fmt::format("\"{}\" holds this tensor but the index does not list it", file), index_json_path, tensor);
    if (entry->second != file)
      throw Error(ErrorCode::IndexTensorUnlisted,
                  fmt::format("\"{}\" holds this tensor but the index places it in \"{}\"", file, entry->second),
                  index_json_path, tensor);
  }
  for (const auto& [file, tensors] : files)
    for (const std::string& tensor : tensors)
      if (!found.contains(tensor))
        throw Error(ErrorCode::IndexTensorMissing,
                    fmt::format("the index places this tensor in \"{}\", which does not hold it", file),
                    index_json_path, tensor);

  for (auto& [file, shard] : shards) {
    merged.append(shard);  // each shard's file indices moved onto the merged list
    for (auto& [key, value] : shard.metadata) merged.metadata.emplace(key, std::move(value));
  }
  return merged;
}

Catalogue read_sharded_catalogue(const std::string& index_path, const FileFormat& format) {
  return read_sharded_catalogue(*local_opener(), index_path, format);
}

}  // namespace wl
