// The custom binary format: meta.txt's lines and the sizes they declare, against an empty model.bin.
#include "fuzz_input.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = wl::fuzz::scratch_dir() / "custom_binary";
    std::filesystem::create_directories(d);
    wl::fuzz::write_file(d / "model.bin", nullptr, 0);
    return d;
  }();
  wl::fuzz::write_file(dir / "meta.txt", data, size);
  try {
    wl::read_custom_binary_catalogue(dir.string());
  } catch (const wl::Error&) {
  }
  return 0;
}
