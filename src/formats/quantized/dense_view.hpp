// A quantized checkpoint's catalogue as a dense model sees it: each quantized layer one F32
// `<layer>.weight` [out, in] decoded during the read, the packed tensors hidden; everything else
// as stored.
#pragma once

#include <memory>

#include "formats/quantized/quant_config.hpp"
#include "weightloader/source.hpp"

namespace wl::quant {

// Throws QuantConfigInvalid when the tensors contradict `config` (another method's tensors; no
// quantized layer at all, when `require_layers`: else the catalogue comes back as it is),
// QuantTensorsInconsistent / QuantUnsupported for a layer that cannot be decoded.
// metadata["quantization"] describes the method, the layers and the dense size.
std::unique_ptr<WeightSource> dense_view(std::shared_ptr<const WeightSource> raw, const QuantConfig& config, bool require_layers);

// Each dense weight's decoder has a spec (Decoder::spec: kind "quantized-layer", with the config and
// the layer's stored tensors), from which this rebuilds it elsewhere, its tensors read through
// `opener`.
std::shared_ptr<const Decoder> layer_decoder_from_spec(const nlohmann::json& spec, const std::shared_ptr<const Opener>& opener,
                                                       const std::vector<std::string>& files);

}  // namespace wl::quant
