#include "formats/quantized/layer_kind.hpp"

namespace wl::quant {

extern const LayerKind kPackedIntKind, kBnb4Kind, kBnb8Kind, kPackQuantizedKind, kCtFp4Kind, kMxfp4Kind, kSparseBitmaskKind,
    kModeloptNvfp4Kind, kFp8Kind, kInt8ValuesKind;

const std::vector<const LayerKind*>& layer_kinds() {
  static const std::vector<const LayerKind*> all{&kPackedIntKind, &kBnb4Kind,          &kBnb8Kind,          &kPackQuantizedKind,
                                                 &kCtFp4Kind,     &kMxfp4Kind,         &kSparseBitmaskKind, &kModeloptNvfp4Kind,
                                                 &kFp8Kind,       &kInt8ValuesKind};
  return all;
}

const LayerKind* layer_kind(std::string_view name) {
  for (const LayerKind* k : layer_kinds())
    if (k->name == name) return k;
  return nullptr;
}

bool strip_suffix(const std::string& name, std::string_view suffix, std::string& prefix) {
  if (!name.ends_with(suffix)) return false;
  prefix = name.substr(0, name.size() - suffix.size());
  return true;
}

}  // namespace wl::quant
