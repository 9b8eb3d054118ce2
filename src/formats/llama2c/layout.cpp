#include "formats/llama2c/layout.hpp"

#include <fmt/format.h>

#include "formats/llama2c/header.hpp"
#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl::llama2c {
namespace {

// A matrix stacked over layers: its Hugging Face suffix, its shape, and its rotary heads.
struct Matrix {
  const char* suffix;
  Shape shape;
  uint64_t rotary_heads = 0;
};

}  // namespace

std::vector<Entry> layout(const Llama2cHeader& h) {
  const Stored matrix = h.version == 2 ? Stored::Q8 : Stored::F32;
  std::vector<Entry> out;
  auto stacked = [&](const char* suffix, Shape shape, Stored stored, uint64_t rotary_heads = 0) {
    for (uint64_t l = 0; l < h.n_layers; ++l)
      out.push_back({fmt::format("model.layers.{}.{}", l, suffix), shape, stored, rotary_heads});
  };
  const Matrix wq{"self_attn.q_proj.weight", {h.dim, h.dim}, h.n_heads};
  const Matrix wk{"self_attn.k_proj.weight", {h.kv_dim(), h.dim}, h.n_kv_heads};
  const Matrix wv{"self_attn.v_proj.weight", {h.kv_dim(), h.dim}};
  const Matrix wo{"self_attn.o_proj.weight", {h.dim, h.dim}};
  const Matrix w1{"mlp.gate_proj.weight", {h.hidden_dim, h.dim}};
  const Matrix w2{"mlp.down_proj.weight", {h.dim, h.hidden_dim}};
  const Matrix w3{"mlp.up_proj.weight", {h.hidden_dim, h.dim}};
  auto matrices = [&](std::initializer_list<const Matrix*> ms) {
    for (const Matrix* m : ms) stacked(m->suffix, m->shape, matrix, m->rotary_heads);
  };
  const Entry embedding{"model.embed_tokens.weight", {h.vocab_size, h.dim}, matrix};
  const Entry final_norm{"model.norm.weight", {h.dim}, Stored::F32};

  if (h.version == 0) {
    out.push_back(embedding);
    stacked("input_layernorm.weight", {h.dim}, Stored::F32);
    matrices({&wq, &wk, &wv, &wo});
    stacked("post_attention_layernorm.weight", {h.dim}, Stored::F32);
    matrices({&w1, &w2, &w3});
    out.push_back(final_norm);
    out.push_back({"", {h.seq_len, h.head_size() / 2}, Stored::RopeCos});
    out.push_back({"", {h.seq_len, h.head_size() / 2}, Stored::RopeSin});
  } else {
    stacked("input_layernorm.weight", {h.dim}, Stored::F32);
    stacked("post_attention_layernorm.weight", {h.dim}, Stored::F32);
    out.push_back(final_norm);
    out.push_back(embedding);
    matrices({&wq, &wk, &wv, &wo, &w1, &w2, &w3});
  }
  if (!h.shared_classifier) out.push_back({"lm_head.weight", {h.vocab_size, h.dim}, matrix});
  return out;
}

uint64_t stored_bytes(const Entry& e, const Llama2cHeader& h) {
  const uint64_t n = shape_numel(e.shape);
  return e.stored == Stored::Q8 ? n + n / h.group_size * sizeof(float) : n * sizeof(float);
}

uint64_t file_size(const Llama2cHeader& h) {
  uint64_t size = header_bytes(h);
  for (const Entry& e : layout(h)) size += stored_bytes(e, h);
  return size;
}

std::vector<uint64_t> hf_row_order(uint64_t heads, uint64_t head_size) {
  // The header's checks (Llama2cInconsistentHeads) already make the head size even: this never throws.
  return rotary_row_order(heads * head_size, heads, RotaryOrder::InterleavedAsHf,
                          {ErrorCode::Llama2cInconsistentHeads, "the header's n_heads / n_kv_heads", ""}, "");
}

}  // namespace wl::llama2c
