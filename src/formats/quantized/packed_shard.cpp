#include "weightloader/packed_shard.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/named_errors.hpp"
#include "formats/quantized/quant_config.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

using quant::Method;
using quant::QuantConfig;

// Names the tensor; packed_shard adds its file.
[[noreturn]] void refuse(const TensorInfo& t, const std::string& rule) {
  throw Error(ErrorCode::QuantUnsupported, "cannot split for tensor parallelism: " + rule, {}, t.name);
}

// Rank `rank`'s share of `dim`, in units of `unit` elements (a packed word's inputs, a group).
Slice share(const TensorInfo& t, size_t dim, uint64_t unit, const std::string& unit_name, unsigned rank, unsigned world) {
  if (dim >= t.shape.size()) refuse(t, fmt::format("it has no dimension {}", dim));
  const uint64_t n = t.shape[dim];
  if (n % world != 0) refuse(t, fmt::format("dimension {} of {} does not split into {} ranks", dim, n, world));
  const uint64_t part = n / world;
  if (part % unit != 0)
    refuse(t, fmt::format("each rank's {} of dimension {} would cut a {} of {}", part, dim, unit_name, unit));
  return Slice{dim, rank * part, (rank + 1) * part};
}

bool ends(const std::string& name, const char* suffix) { return name.ends_with(suffix); }

Slice packed_int(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  const uint64_t pack = c.method == Method::Awq ? 8 : 32 / static_cast<uint64_t>(c.bits);
  const uint64_t group = c.group_size < 0 ? 0 : static_cast<uint64_t>(c.group_size);
  const bool gptq = c.method == Method::Gptq;
  if (style == ParallelStyle::Column) {
    if (ends(t.name, ".g_idx")) return {};
    if (ends(t.name, ".bias")) return share(t, 0, 1, "row", rank, world);
    // qweight's outputs are unpacked in GPTQ, packed 8 to a word in AWQ; qzeros' always packed.
    if (ends(t.name, ".qweight")) return share(t, 1, gptq ? pack : 1, "packed word of zeros", rank, world);
    if (ends(t.name, ".qzeros")) return share(t, 1, 1, "packed word", rank, world);
    if (ends(t.name, ".scales")) return share(t, 1, pack, "packed word of zeros", rank, world);
    refuse(t, "not a tensor of a GPTQ/AWQ layer");
  }
  if (ends(t.name, ".bias")) return {};
  if (gptq && c.desc_act) refuse(t, "act-order (desc_act) GPTQ layers keep their groups in g_idx's order, not by input rows");
  if (ends(t.name, ".scales") || ends(t.name, ".qzeros"))  // whole groups; one group per layer: every rank needs it
    return group == 0 ? Slice{} : share(t, 0, 1, "group", rank, world);
  if (ends(t.name, ".g_idx")) return share(t, 0, group ? group : pack, group ? "group" : "packed word", rank, world);
  if (ends(t.name, ".qweight")) {
    // Rows of qweight are pack inputs (GPTQ) or one input (AWQ); a rank's rows must be whole groups.
    const uint64_t rows_per_group = group ? (gptq ? group / pack : group) : 1;
    return share(t, 0, rows_per_group, "group", rank, world);
  }
  refuse(t, "not a tensor of a GPTQ/AWQ layer");
}

Slice fp8(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  const bool column = style == ParallelStyle::Column;
  const bool scale = ends(t.name, "_scale") || ends(t.name, "_scale_inv");
  // Scales per group of inputs (compressed-tensors' group strategy, MXFP8): [out, groups].
  const bool grouped = c.fp8_block.empty() && c.group_size > 0 && c.ct_strategy == "group";
  if (ends(t.name, ".bias")) return column ? share(t, 0, 1, "row", rank, world) : Slice{};
  if (!scale) {
    const uint64_t unit = !c.fp8_block.empty() ? static_cast<uint64_t>(c.fp8_block[column ? 0 : 1])
                          : grouped && !column  ? static_cast<uint64_t>(c.group_size)
                                                : 1;
    return share(t, column ? 0 : 1, unit, grouped ? "group" : "scale block", rank, world);
  }
  if (t.numel() <= 1 || ends(t.name, "input_scale")) return {};  // per tensor: every rank needs it
  if ((grouped || !c.fp8_block.empty()) && t.shape.size() == 2 && t.shape[1] != 1)
    return share(t, column ? 0 : 1, 1, grouped ? "group" : "block", rank, world);
  return column ? share(t, 0, 1, "row", rank, world) : Slice{};  // per channel: one scale per output row
}

// compressed-tensors pack-quantized: weight_packed [out, words] holds each row's bit stream, so an
// input split takes whole groups of words (or, per channel, words that start on a value: 32 values
// when values straddle words); weight_zero_point is packed the same way down each column.
Slice pack_quantized(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  const uint64_t bits = static_cast<uint64_t>(c.bits);
  const uint64_t aligned_words = 32 % bits == 0 ? 1 : bits;  // words that end on a value boundary
  const bool grouped = c.group_size > 0 && c.ct_strategy == "group";
  if (ends(t.name, ".weight_shape") || (ends(t.name, ".weight_g_idx") && style == ParallelStyle::Column)) return {};
  if (style == ParallelStyle::Column) {
    if (ends(t.name, ".weight_packed") || ends(t.name, ".weight_scale") || ends(t.name, ".bias")) return share(t, 0, 1, "row", rank, world);
    if (ends(t.name, ".weight_zero_point")) return share(t, 0, aligned_words, "run of packed zero points", rank, world);
    refuse(t, "not a tensor of a pack-quantized layer");
  }
  if (ends(t.name, ".bias")) return {};
  if (ends(t.name, ".weight_g_idx")) refuse(t, "act-order layers keep their groups in g_idx's order, not by input columns");
  if (ends(t.name, ".weight_packed")) {
    if (!grouped) return share(t, 1, aligned_words, "run of packed values", rank, world);
    if (static_cast<uint64_t>(c.group_size) * bits % 32 != 0) refuse(t, fmt::format("a group of {} {}-bit values is not whole words", c.group_size, bits));
    return share(t, 1, static_cast<uint64_t>(c.group_size) * bits / 32, "group", rank, world);
  }
  if (ends(t.name, ".weight_scale") || ends(t.name, ".weight_zero_point")) return grouped ? share(t, 1, 1, "group", rank, world) : Slice{};
  refuse(t, "not a tensor of a pack-quantized layer");
}

// compressed-tensors NVFP4 / MXFP4: weight_packed U8 [out, in / 2] and weight_scale [out, groups]; an
// input split takes whole groups (group_size / 2 bytes); the global scales go to every rank.
Slice fp4_packed(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  const bool column = style == ParallelStyle::Column;
  if (ends(t.name, "global_scale") || ends(t.name, ".input_scale")) return {};
  if (ends(t.name, ".bias")) return column ? share(t, 0, 1, "row", rank, world) : Slice{};
  if (column && (ends(t.name, ".weight_packed") || ends(t.name, ".weight_scale"))) return share(t, 0, 1, "row", rank, world);
  if (ends(t.name, ".weight_packed")) return share(t, 1, static_cast<uint64_t>(std::max<int64_t>(c.group_size, 2)) / 2, "group", rank, world);
  if (ends(t.name, ".weight_scale")) return share(t, 1, 1, "group", rank, world);
  refuse(t, fmt::format("not a tensor of an {} layer", c.ct_format));
}

// ModelOpt NVFP4: weight U8 [out, in / 2] and weight_scale [out, in / group_size] split like
// compressed-tensors' FP4 (whole groups along the inputs); weight_scale_2 and input_scale go to every rank.
// ModelOpt FP8 is FP8 with a per-tensor scale.
Slice modelopt(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  if (c.modelopt_algo == "FP8") return fp8(t, c, style, rank, world);
  const bool column = style == ParallelStyle::Column;
  if (ends(t.name, ".weight_scale_2") || ends(t.name, ".input_scale")) return {};
  if (ends(t.name, ".bias")) return column ? share(t, 0, 1, "row", rank, world) : Slice{};
  if (column && (ends(t.name, ".weight") || ends(t.name, ".weight_scale"))) return share(t, 0, 1, "row", rank, world);
  if (ends(t.name, ".weight")) return share(t, 1, static_cast<uint64_t>(c.group_size) / 2, "group", rank, world);
  if (ends(t.name, ".weight_scale")) return share(t, 1, 1, "group", rank, world);
  refuse(t, "not a tensor of a ModelOpt NVFP4 layer");
}

// compressed-tensors naive-/int-quantized: one int8 per value, so the plain splits, an input split on
// whole groups with the groups' scales and zero points ([out, groups]) beside it.
Slice int8_values(const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank, unsigned world) {
  const bool column = style == ParallelStyle::Column, grouped = c.group_size > 0 && c.ct_strategy == "group";
  if (ends(t.name, ".weight_g_idx")) {
    if (column) return {};
    refuse(t, "act-order layers keep their groups in g_idx's order, not by input columns");
  }
  if (ends(t.name, ".bias")) return column ? share(t, 0, 1, "row", rank, world) : Slice{};
  if (ends(t.name, "input_scale") || t.numel() <= 1) return {};
  if (ends(t.name, ".weight_scale") || ends(t.name, ".weight_zero_point"))
    return column ? share(t, 0, 1, "row", rank, world) : grouped ? share(t, 1, 1, "group", rank, world) : Slice{};
  return share(t, column ? 0 : 1, column || !grouped ? 1 : static_cast<uint64_t>(c.group_size), "group", rank, world);
}

// A compressed-tensors layer: sparse tensors have no split of their own (their values are packed
// per row), integer and float values their format's.
Slice compressed_tensors(const WeightSource& source, const TensorInfo& t, const QuantConfig& c, ParallelStyle style, unsigned rank,
                         unsigned world) {
  if (!c.ct_sparsity.empty() && c.ct_sparsity != "dense" && (ends(t.name, ".compressed") || ends(t.name, ".bitmask") ||
                                                            ends(t.name, ".row_offsets") || ends(t.name, ".shape")))
    refuse(t, fmt::format("{} values are packed per row; load the layer dequantized", c.ct_sparsity));
  if (c.ct_format == "pack-quantized") return pack_quantized(t, c, style, rank, world);
  if (c.ct_format.ends_with("fp4-pack-quantized")) return fp4_packed(t, c, style, rank, world);
  const std::string prefix = t.name.substr(0, t.name.rfind('.'));
  const TensorInfo* weight = source.find(prefix + ".weight");
  return weight && weight->dtype == DType::I8 ? int8_values(t, c, style, rank, world) : fp8(t, c, style, rank, world);
}

// gpt-oss MXFP4 experts: `_blocks` [E, R, G, B] and `_scales` [E, R, G] split along R, a projection's
// outputs (gate_up_proj, column), or G, its inputs in whole blocks of 2B values (down_proj, row);
// `_bias` [E, R] follows the outputs.
Slice mxfp4(const TensorInfo& t, ParallelStyle style, unsigned rank, unsigned world) {
  const bool column = style == ParallelStyle::Column;
  if (ends(t.name, "_bias")) return column ? share(t, 1, 1, "row", rank, world) : Slice{};
  if (ends(t.name, "_blocks") || ends(t.name, "_scales")) return share(t, column ? 1 : 2, 1, column ? "row" : "block", rank, world);
  refuse(t, "not a tensor of MXFP4 experts (_blocks, _scales, _bias)");
}

}  // namespace

Slice packed_shard(const WeightSource& source, const TensorInfo& tensor, ParallelStyle style, unsigned rank, unsigned world) {
  if (world == 0 || rank >= world)
    throw Error(ErrorCode::InvalidArgument, fmt::format("rank {} of {} ranks", rank, world), source.origin(), tensor.name);
  auto it = source.metadata().find("quantization_config");
  if (it == source.metadata().end())
    throw Error(ErrorCode::QuantConfigInvalid, "the catalogue carries no quantization_config (load it with quantized=as_stored)",
                source.origin(), tensor.name);
  const nlohmann::json block = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (block.is_discarded())
    throw Error(ErrorCode::QuantConfigInvalid, "the catalogue's quantization_config is not JSON", source.origin(), tensor.name);
  const QuantConfig c = quant::parse_quant_config(block, source.origin());
  if (world == 1) return {};
  return naming_file(source.file_of(tensor), [&]() -> Slice {
    switch (c.method) {
      case Method::Gptq:
      case Method::Awq: return packed_int(tensor, c, style, rank, world);
      case Method::Fp8: return fp8(tensor, c, style, rank, world);
      case Method::CompressedTensors: return compressed_tensors(source, tensor, c, style, rank, world);
      case Method::Mxfp4: return mxfp4(tensor, style, rank, world);
      case Method::Modelopt: return modelopt(tensor, c, style, rank, world);
      case Method::Bnb4:
      case Method::Bnb8: break;
    }
    refuse(tensor, "bitsandbytes packs the flattened weight; load it dequantized, or whole");
  });
}

}  // namespace wl
