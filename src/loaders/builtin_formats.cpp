// The formats detection tries when a context names none, with GGUF as the loading layer presents
// it (Hugging Face names: gguf_hf_names.cpp).
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/formats/pytorch.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {

const FormatList& builtin_formats() {
  static const FormatList formats = [] {
    FormatList list;
    list.add(safetensors_format());
    list.add(pytorch_format());
    list.add(gguf_format());
    list.add(llama2c_format());  // last: v0 has no magic, only a plausible header and an exact size
    return list;
  }();
  return formats;
}

const FormatList& formats_of(const Context& context) { return context.formats ? *context.formats : builtin_formats(); }

const FileFormat* find_file_format(const std::string& name) { return builtin_formats().find(name); }

const FileFormat* detect_file_format(const std::string& path) { return builtin_formats().detect(*local_opener()->open(path)); }

}  // namespace wl
