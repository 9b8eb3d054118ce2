#include <memory>

#include "loaders/builtin_loaders.hpp"
#include "loaders/config_json.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// Reads the catalogue of a meta.txt + model.bin directory; loading is the default load_weights.
class CustomBinaryLoader : public WeightLoader {
 public:
  std::unique_ptr<WeightSource> get_weights(const std::string& path, const LoadOptions& call) const override {
    const std::shared_ptr<const Opener> files = session_opener(call);
    Catalogue catalogue = read_custom_binary_catalogue(*files, path);
    attach_config_json(*files, path, catalogue.metadata);
    return std::make_unique<WeightSource>("custom_binary", path, std::move(catalogue), files);
  }
};

}  // namespace

void register_custom_binary_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "custom_binary",
      LoaderSpec{"The seed's custom binary format: a directory with meta.txt (`name:d0,d1,...` per tensor) "
                 "and model.bin (float32 values back to back, little-endian). Pass the directory or either file.",
                 {},
                 [](const Kwargs&) { return std::make_unique<CustomBinaryLoader>(); }});
}

}  // namespace wl
