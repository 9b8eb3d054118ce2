// A kind of quantized layer: which stored tensor marks one, which quantization configs make such
// layers, and how its dense view is built. Each kind is defined in its decoder's file and listed
// once in layer_kinds.cpp; the dense view (dense_view.cpp) and the catalogue's decoder specs find
// kinds only through this list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "formats/quantized/layer_decoder.hpp"

namespace wl::quant {

struct LayerKind {
  std::string_view name;  // what its tensors show, for messages and decoder specs: "GPTQ/AWQ (qweight)"
  // Whether `t` marks a layer of this kind: then `prefix` names the layer and `extra` holds what
  // make() needs beside it (a quant_state's or a scale's name), else they are left as they were.
  bool (*marks)(const WeightSource& raw, const TensorInfo& t, std::string& prefix, std::string& extra);
  bool (*made_by)(const QuantConfig& c);  // whether `c` quantizes layers this way
  QuantLayer (*make)(const RawSource& raw, const std::string& prefix, const std::string& extra, const QuantConfig& c);
};

// Every kind, in the order they are tried.
const std::vector<const LayerKind*>& layer_kinds();
// The kind of that name; null when none.
const LayerKind* layer_kind(std::string_view name);

// Whether `name` ends with `suffix`; then `prefix` is what comes before it (a helper for marks()).
bool strip_suffix(const std::string& name, std::string_view suffix, std::string& prefix);

}  // namespace wl::quant
