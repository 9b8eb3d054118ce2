// "hf": a Hugging Face model directory, or a model id resolved through the local cache.
// Weights: safetensors first (index, else every *.safetensors), then PyTorch .bin (index, else
// pytorch_model*.bin / model*.bin); training leftovers are never read.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "formats/confined_path.hpp"
#include "loaders/builtin_loaders.hpp"
#include "loaders/config_json.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/hf_cache.hpp"
#include "weightloader/registry.hpp"

namespace wl {

namespace {

bool is_safetensors(const std::string& name) { return name.ends_with(".safetensors"); }

// PyTorch weight files, without optimizer/scheduler/trainer state.
bool is_pytorch_weights(const std::string& name) {
  static const char* leftovers[] = {"optimizer", "scheduler", "training_args", "trainer_state", "rng_state", "scaler"};
  for (const char* l : leftovers)
    if (name.starts_with(l)) return false;
  return name.ends_with(".bin") && (name.starts_with("pytorch_model") || name.starts_with("model"));
}

}  // namespace

bool is_hf_weights_file(const std::string& name) {
  return is_safetensors(name) || is_pytorch_weights(name) || name == "model.safetensors.index.json" ||
         name == "pytorch_model.bin.index.json";
}

namespace {

namespace fs = std::filesystem;

std::vector<std::string> files_matching(const fs::path& dir, bool (*wanted)(const std::string&)) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    std::error_code ec;
    if (fs::is_regular_file(e.path(), ec) && wanted(e.path().filename().string())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const FileFormat& format_named(const std::string& name) {
  if (const FileFormat* f = find_file_format(name)) return *f;
  throw Error(ErrorCode::InvalidArgument, fmt::format("format '{}' is not available in this build", name));
}

class HfLoader final : public WeightLoader {
 public:
  explicit HfLoader(std::string revision) : revision_(std::move(revision)) {}

  std::unique_ptr<WeightSource> get_weights(const std::string& model_name_or_path) override {
    std::error_code ec;
    fs::path dir = model_name_or_path;
    fs::path root = dir;  // everything read must stay inside this folder
    if (!fs::exists(dir, ec)) {
      dir = resolve_hf_snapshot(model_name_or_path, revision_);
      root = dir.parent_path().parent_path();  // models--org--name
    }
    if (!fs::is_directory(dir, ec)) {
      const FileFormat* f = detect_file_format(dir.string());
      if (!f) throw Error(ErrorCode::InvalidArgument, "not a Hugging Face model directory nor a checkpoint file", dir.string());
      return open_files(*f, {dir.string()}, dir.string());
    }
    std::unique_ptr<WeightSource> source = open_weights(dir, root);
    return source;
  }

 private:
  std::unique_ptr<WeightSource> open_weights(const fs::path& dir, const fs::path& root) {
    auto sharded = [&](const fs::path& index, const FileFormat& format) {
      require_inside(index.string(), root.string());
      Catalogue c = read_sharded_catalogue(index.string(), format, root.string());
      attach_config_json(dir, c.metadata, root);
      return std::make_unique<WeightSource>(format.name, dir.string(), std::move(c.tensors), std::move(c.metadata));
    };
    auto plain = [&](const std::vector<std::string>& files, const FileFormat& format) {
      for (const std::string& f : files) require_inside(f, root.string());
      std::unique_ptr<WeightSource> s = open_files(format, files, dir.string());
      std::map<std::string, std::string> metadata = s->metadata();
      attach_config_json(dir, metadata, root);
      return std::make_unique<WeightSource>(s->format(), dir.string(), s->tensors(), std::move(metadata));
    };
    std::error_code ec;
    if (fs::exists(dir / "model.safetensors.index.json", ec))
      return sharded(dir / "model.safetensors.index.json", format_named("safetensors"));
    if (auto files = files_matching(dir, is_safetensors); !files.empty()) return plain(files, format_named("safetensors"));
    if (fs::exists(dir / "pytorch_model.bin.index.json", ec))
      return sharded(dir / "pytorch_model.bin.index.json", format_named("pytorch"));
    if (auto files = files_matching(dir, is_pytorch_weights); !files.empty()) return plain(files, format_named("pytorch"));
    throw Error(ErrorCode::NoMatchingFiles,
                "no weights found: looked for model.safetensors.index.json, *.safetensors, pytorch_model.bin.index.json "
                "and pytorch_model*.bin / model*.bin",
                dir.string());
  }

  std::string revision_;
};

}  // namespace

void register_hf_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "hf",
      LoaderSpec{
          .description = "a Hugging Face model directory or a model id (org/name) from the local Hugging Face cache; "
                         "safetensors preferred, PyTorch .bin otherwise; index files honoured",
          .kwargs = {{"revision", KwType::String, "branch, tag or full commit hash of a cached model id (default main)"}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<HfLoader>(kwarg_string(kw, "revision", "main"));
          },
      });
}

}  // namespace wl
