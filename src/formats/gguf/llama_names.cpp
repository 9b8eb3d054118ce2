// Llama tensor names between GGUF and Hugging Face, and the rotary row permutation between the
// interleaved (GGUF / Meta) and the Hugging Face ("rotate half") layouts of q/k projections.
#include <array>
#include <utility>

#include <fmt/format.h>

#include "core/layer_name.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"

namespace wl {
namespace {

// Stems (the name without its last component, .weight / .bias) of whole-model tensors.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kModelStems{{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};

// Stems within layer N: blk.N.<gguf> <-> model.layers.N.<hf>.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kLayerStems{{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};

// Maps `name` = stem + "." + last component through the tables, in the direction `from` -> `to`.
std::optional<std::string> map_name(std::string_view name, std::string_view layer_from, std::string_view layer_to,
                                    bool gguf_to_hf) {
  const size_t last_dot = name.rfind('.');
  if (last_dot == std::string_view::npos) return std::nullopt;
  const std::string_view suffix = name.substr(last_dot);  // ".weight"
  const std::string_view stem = name.substr(0, last_dot);
  for (const auto& [gguf, hf] : kModelStems)
    if (stem == (gguf_to_hf ? gguf : hf)) return std::string(gguf_to_hf ? hf : gguf) + std::string(suffix);
  const auto layer = split_layer_name(stem, layer_from);
  if (!layer) return std::nullopt;
  for (const auto& [gguf, hf] : kLayerStems)
    if (layer->second == (gguf_to_hf ? gguf : hf))
      return fmt::format("{}{}.{}{}", layer_to, layer->first, gguf_to_hf ? hf : gguf, suffix);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> gguf_llama_name_to_hf(std::string_view gguf_name) {
  return map_name(gguf_name, "blk.", "model.layers.", true);
}

std::optional<std::string> hf_llama_name_to_gguf(std::string_view hf_name) {
  return map_name(hf_name, "model.layers.", "blk.", false);
}

std::vector<uint64_t> rotary_interleaved_to_hf_rows(uint64_t rows, uint64_t heads, bool inverse) {
  if (heads == 0 || rows % (2 * heads) != 0)
    throw Error(ErrorCode::GgufHeadCount,
                fmt::format("{} rows do not split into {} heads of an even size", rows, heads));
  const uint64_t d = rows / heads, half = d / 2;
  std::vector<uint64_t> order(rows);
  // Within each head, HF row j * half + i (j = 0, 1) is interleaved row 2i + j.
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t j = 0; j < 2; ++j)
      for (uint64_t i = 0; i < half; ++i) {
        const uint64_t hf = h * d + j * half + i, interleaved = h * d + 2 * i + j;
        if (inverse) order[interleaved] = hf;
        else order[hf] = interleaved;
      }
  return order;
}

}  // namespace wl
