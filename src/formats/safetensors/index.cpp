// Sharded safetensors checkpoints: the shared index reader, with safetensors shards.
#include "weightloader/formats/safetensors.hpp"

namespace wl {

Catalogue open_safetensors_index(const std::string& index_json_path) {
  return read_sharded_catalogue(index_json_path, safetensors_format());
}

}  // namespace wl
