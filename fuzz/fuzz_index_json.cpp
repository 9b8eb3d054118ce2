// Sharded checkpoints: an index.json next to one valid shard, model.safetensors, that it may list.
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = wl::fuzz::scratch_dir() / "index";
    std::filesystem::create_directories(d);
    wl::write_safetensors((d / "model.safetensors").string(), {{"w", wl::TensorView::empty(wl::DType::F32, {2})}});
    return d;
  }();
  const auto index = dir / "model.safetensors.index.json";
  wl::fuzz::write_file(index, data, size);
  try {
    wl::open_safetensors_index(index.string());
  } catch (const wl::Error&) {
  }
  return 0;
}
