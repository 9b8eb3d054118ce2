// Tensor-parallel slices of quantized layers loaded as stored (the `quantized=as_stored` kwarg):
// which part of each packed tensor a rank holds, as vLLM's quantized linear layers split them.
#pragma once

#include <string>

#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

enum class ParallelStyle {
  Column,  // the outputs are split (q/k/v, gate/up): rank r holds outputs [r·out/world, (r+1)·out/world)
  Row,     // the inputs are split (o_proj, down_proj): rank r holds inputs [r·in/world, (r+1)·in/world)
};

// The slice of `tensor` (a qweight, qzeros, scales, g_idx, bias, FP8 weight or weight_scale of a
// quantized layer in `source`, whose metadata["quantization_config"] says the method) that rank
// `rank` of `world` holds. GPTQ/AWQ: column splits cut qweight/qzeros along their packed output
// dimension on whole words; row splits take whole packed rows and whole groups of scales and
// zeros, and g_idx's inputs (replicated under column splits); FP8 block scales follow their blocks;
// MXFP4 experts split their rows (column) or their blocks of 32 inputs (row), scales beside them.
// A split that would cut a packed word or a group, a row split of an act-order GPTQ layer (its
// groups are not contiguous), or bitsandbytes' flat packing: QuantUnsupported naming the tensor
// and the rule. A slice that selects everything means every rank holds the tensor whole.
WL_API Slice packed_shard(const WeightSource& source, const TensorInfo& tensor, ParallelStyle style, unsigned rank, unsigned world);

}  // namespace wl
