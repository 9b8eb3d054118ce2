// "hf": a Hugging Face model directory, or a model id resolved through the cache (and downloaded
// into it when missing, by the downloader the remote component installs: streamed, read as it
// arrives).
// Weights: safetensors first (index, else every *.safetensors), then PyTorch .bin (index, else
// pytorch_model*.bin / model*.bin); training leftovers are never read.
#include <fmt/format.h>

#include "hf_cache/hf_weights_files.hpp"
#include "loaders/builtin_loaders.hpp"
#include "loaders/config_json.hpp"
#include "loaders/quantized_source.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/hf_cache.hpp"
#include "weightloader/registry.hpp"

namespace wl {

namespace {

// The files of `dir` that `wanted` takes. Where the opener cannot list (HTTP has no listing), the
// one file save_pretrained writes for an unsharded model (`single`), when it is there.
std::vector<std::string> files_matching(const Opener& opener, const std::string& dir, bool (*wanted)(const std::string&),
                                        const char* single) {
  std::vector<std::string> names;
  try {
    names = opener.list(dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::InvalidArgument) throw;
    const std::string file = opener.join(dir, single);
    return opener.exists(file) ? std::vector<std::string>{file} : std::vector<std::string>{};
  }
  std::vector<std::string> out;
  for (const std::string& name : names)
    if (wanted(base_name(name))) out.push_back(name);
  return out;
}

class HfLoader final : public WeightLoader {
 public:
  HfLoader(std::string revision, std::string cache_dir, bool download, bool stream, bool as_stored)
      : revision_(std::move(revision)), cache_dir_(std::move(cache_dir)), download_(download), stream_(stream),
        as_stored_(as_stored) {}

  std::unique_ptr<WeightSource> get_weights(const std::string& model_name_or_path, const LoadOptions& call) const override {
    std::shared_ptr<const Opener> session = session_opener(call);
    const FormatList& formats = formats_of(call.context);
    std::string dir = model_name_or_path;
    if (!session->exists(dir)) {
      const HfSnapshot snapshot = snapshot_of(model_name_or_path, call);
      if (snapshot.arriving) {
        session = std::make_shared<CachingOpener>(snapshot.arriving);
        try {
          return open_dir(formats, snapshot.directory, session);
        } catch (const Error&) {
          // Bytes still arriving may be wrong ones (a header that does not parse): the download's
          // own failure (their digest) is then the cause to report.
          for (const std::string& name : session->list(snapshot.directory)) session->open(name)->settle();
          throw;
        }
      }
      dir = snapshot.directory;
    }
    return open_dir(formats, dir, session);
  }

 private:
  std::unique_ptr<WeightSource> open_dir(const FormatList& formats, const std::string& dir,
                                         const std::shared_ptr<const Opener>& session) const {
    const Opener& files = *session;
    if (!files.is_directory(dir)) {
      const FileFormat* f = formats.detect(*files.open(dir));
      if (!f) throw Error(ErrorCode::InvalidArgument, "not a Hugging Face model directory nor a checkpoint file", dir);
      return checkpoint_view(open_files(*f, {dir}, dir, session), files, as_stored_);
    }
    return checkpoint_view(open_weights(formats, dir, session), files, as_stored_);
  }

  static const FileFormat& format_named(const FormatList& formats, const std::string& name) {
    if (const FileFormat* f = formats.find(name)) return *f;
    throw Error(ErrorCode::InvalidArgument, fmt::format("format '{}' is not available in this build", name));
  }

  std::unique_ptr<WeightSource> open_weights(const FormatList& formats, const std::string& dir,
                                            const std::shared_ptr<const Opener>& session) const {
    const Opener& files = *session;
    auto sharded = [&](const std::string& index, const FileFormat& format) {
      Catalogue c = read_sharded_catalogue(files, index, format);
      attach_config_json(files, dir, c.metadata);
      return std::make_unique<WeightSource>(format.name, dir, std::move(c), session);
    };
    auto plain = [&](const std::vector<std::string>& names, const FileFormat& format) {
      std::unique_ptr<WeightSource> s = open_files(format, names, dir, session);
      std::map<std::string, std::string> metadata = s->metadata();
      attach_config_json(files, dir, metadata);
      return s->with_metadata(std::move(metadata));
    };
    if (const std::string index = files.join(dir, "model.safetensors.index.json"); files.exists(index))
      return sharded(index, format_named(formats, "safetensors"));
    if (auto names = files_matching(files, dir, is_hf_safetensors_file, "model.safetensors"); !names.empty()) return plain(names, format_named(formats, "safetensors"));
    if (const std::string index = files.join(dir, "pytorch_model.bin.index.json"); files.exists(index))
      return sharded(index, format_named(formats, "pytorch"));
    if (auto names = files_matching(files, dir, is_hf_pytorch_weights_file, "pytorch_model.bin"); !names.empty()) return plain(names, format_named(formats, "pytorch"));
    throw Error(ErrorCode::NoMatchingFiles,
                "no weights found: looked for model.safetensors.index.json, *.safetensors, pytorch_model.bin.index.json "
                "and pytorch_model*.bin / model*.bin",
                dir);
  }

  // The model id's snapshot in the cache, downloaded (with the load's concurrency, and its
  // progress callback unless streamed: the load reports the bytes as they arrive) when it is
  // missing, downloading is on and HF_HUB_OFFLINE is not set.
  HfSnapshot snapshot_of(const std::string& model_id, const LoadOptions& call) const {
    if (!download_) return {resolve_hf_snapshot(model_id, revision_, cache_dir_), nullptr};
    HfDownload request;
    request.model_id = model_id;
    request.revision = revision_;
    request.cache_dir = cache_dir_;
    if (call.io.concurrency) request.concurrency = call.io.concurrency;
    request.progress = call.io.progress;
    request.stream = stream_;
    return find_or_download_hf_snapshot(request, call.context.downloader);
  }

  std::string revision_;
  std::string cache_dir_;
  bool download_;
  bool stream_;
  bool as_stored_;
};

}  // namespace

void register_hf_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "hf",
      LoaderSpec{
          .description = "a Hugging Face model directory or a model id (org/name) from the Hugging Face cache, downloaded "
                         "from the hub when missing; "
                         "safetensors preferred, PyTorch .bin otherwise; index files honoured",
          .kwargs = {{"revision", KwType::String, "branch, tag or full commit hash of a model id (default main)"},
                     {"cache_dir", KwType::String, "the hub cache (default HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)"},
                     {"download", KwType::Bool, "download a model id missing from the cache from HF_ENDPOINT (default true; "
                                                "HF_HUB_OFFLINE=1 forbids it)"},
                     {"stream", KwType::Bool, "load a model id's weights while they download, writing them through into "
                                              "the cache (default true; false: download the whole snapshot, then load)"},
                     {"quantized", KwType::String, kQuantizedKwargHelp}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<HfLoader>(kwarg_string(kw, "revision", "main"), kwarg_string(kw, "cache_dir", ""),
                                              kwarg_bool(kw, "download", true), kwarg_bool(kw, "stream", true),
                                              quantized_as_stored(kwarg_string(kw, "quantized", "dequantize")));
          },
      });
}

}  // namespace wl
