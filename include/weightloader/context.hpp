// What a load reaches outside itself through: where names are opened, which formats "auto"
// detects, how a model id missing from the Hugging Face cache is fetched, which devices besides
// the CPU can hold parameters. A program builds one at start (Context{}: local files only, then
// with_remote() and with_cuda_devices() for what it links) and hands it to its loads through
// LoadOptions::context, LLMOptions::context or a registry; nothing is installed process-wide.
#pragma once

#include <memory>

#include "weightloader/byte_source.hpp"
#include "weightloader/export.hpp"
#include "weightloader/hf_download.hpp"

namespace wl {

class FormatList;
class DeviceEngines;  // opaque: made by with_cuda_devices() (weightloader/cuda.hpp)

struct WL_API Context {
  std::shared_ptr<const Opener> opener;       // null: local files only (other schemes refused by name)
  std::shared_ptr<const FormatList> formats;  // null: the built-in formats (formats_of(), checkpoint_names.hpp)
  HfDownloader downloader;                    // empty: model ids come from the cache only
  std::shared_ptr<const DeviceEngines> devices;  // null: the CPU only

  // The opener with its default filled in.
  std::shared_ptr<const Opener> files() const;
};

}  // namespace wl
