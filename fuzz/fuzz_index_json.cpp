// Sharded checkpoints: an index.json next to one valid shard, model.safetensors, that it may list.
#include <cstdlib>
#include <string>

#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace {

// model.safetensors: one F32 tensor "w" of shape [2], zeros; checked once so that a broken shard
// cannot quietly turn every input into the same error.
std::shared_ptr<wl::ByteSource> make_shard() {
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(8, '\0');
  auto shard = wl::memory_source("in/model.safetensors", wl::MemoryRegion::of_string(std::move(bytes)));
  if (wl::read_safetensors_catalogue(*shard).tensors.size() != 1) std::abort();
  return shard;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<wl::ByteSource> shard = make_shard();
  wl::MemoryOpener checkpoint;
  checkpoint.add(shard);
  checkpoint.add("in/model.safetensors.index.json", wl::fuzz::region(data, size));
  try {
    wl::read_sharded_catalogue(checkpoint, "in/model.safetensors.index.json", wl::safetensors_format());
  } catch (const wl::Error&) {
  }
  return 0;
}
