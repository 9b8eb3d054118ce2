#include "engine/tensor_parallel.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

RankPartition partition_rank(const LlamaConfig& c, unsigned rank, unsigned size) {
  auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::ConfigInvalid, fmt::format("field 'tensor_parallel_size': {} {}", size, why));
  };
  if (size == 0) throw refuse("must be at least 1");
  if (c.num_heads % size != 0) throw refuse(fmt::format("does not divide num_attention_heads {}", c.num_heads));
  if (c.num_kv_heads % size != 0 && size % c.num_kv_heads != 0)
    throw refuse(fmt::format("neither divides nor is a multiple of num_key_value_heads {}", c.num_kv_heads));
  if (size > c.intermediate_size || size > c.vocab_size) throw refuse("leaves a rank without MLP units or vocabulary");
  RankPartition p;
  p.rank = rank;
  p.size = size;
  p.q_heads = c.num_heads / size;
  p.q_head0 = rank * p.q_heads;
  const uint64_t group = c.num_heads / c.num_kv_heads;  // query heads per kv head
  p.kv_head0 = p.q_head0 / group;
  p.kv_heads = c.num_kv_heads >= size ? c.num_kv_heads / size : 1;
  // MLP units split in whole quantisation blocks (256 for K-quants, 32 for the others) when the size
  // allows, so row-parallel down_proj columns of a quantised GGUF file stay readable.
  uint64_t granule = 1;
  for (uint64_t g : {256u, 32u})
    if (c.intermediate_size % g == 0 && c.intermediate_size / g >= size) {
      granule = g;
      break;
    }
  const uint64_t units = c.intermediate_size / granule;
  p.ff0 = granule * (units * rank / size);
  p.ff = granule * (units * (rank + 1) / size) - p.ff0;
  p.vocab0 = c.vocab_size * rank / size;
  p.vocab = c.vocab_size * (rank + 1) / size - p.vocab0;
  return p;
}

Model declare_rank_parameters(const LlamaConfig& c, const RankPartition& p, DType dtype) {
  Model m;
  const uint64_t D = c.hidden_size, hd = c.head_dim;
  const uint64_t q_rows = p.q_heads * hd, kv_rows = p.kv_heads * hd;
  auto rows = [](std::string from, uint64_t begin, uint64_t count, uint64_t at) {
    return ParameterShard{std::move(from), Slice{0, begin, begin + count}, at};
  };
  auto columns = [](std::string from, uint64_t begin, uint64_t count) {
    return ParameterShard{std::move(from), Slice{1, begin, begin + count}, 0};
  };
  auto whole = [&](const std::string& name, uint64_t n) { m.add_parameter(name, {n}, DType::F32); };

  m.add_parameter("model.embed_tokens.weight", {p.vocab, D}, dtype,
                  {rows("model.embed_tokens.weight", p.vocab0, p.vocab, 0)});
  for (uint64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    const std::string attn = at + "self_attn.", mlp = at + "mlp.";
    whole(at + "input_layernorm.weight", D);
    whole(at + "post_attention_layernorm.weight", D);
    for (const char* kind : {"weight", "bias"}) {
      const bool bias = std::string(kind) == "bias";
      if (bias && !c.qkv_bias) continue;
      const Shape shape = bias ? Shape{q_rows + 2 * kv_rows} : Shape{q_rows + 2 * kv_rows, D};
      m.add_parameter(attn + "qkv_proj." + kind, shape, bias ? DType::F32 : dtype,
                      {rows(attn + "q_proj." + kind, p.q_head0 * hd, q_rows, 0),
                       rows(attn + "k_proj." + kind, p.kv_head0 * hd, kv_rows, q_rows),
                       rows(attn + "v_proj." + kind, p.kv_head0 * hd, kv_rows, q_rows + kv_rows)});
    }
    m.add_parameter(attn + "o_proj.weight", {D, q_rows}, dtype, {columns(attn + "o_proj.weight", p.q_head0 * hd, q_rows)});
    if (c.o_bias && p.rank == 0) whole(attn + "o_proj.bias", D);
    for (const char* kind : {"weight", "bias"}) {
      const bool bias = std::string(kind) == "bias";
      if (bias && !c.mlp_bias) continue;
      const Shape shape = bias ? Shape{2 * p.ff} : Shape{2 * p.ff, D};
      m.add_parameter(mlp + "gate_up_proj." + kind, shape, bias ? DType::F32 : dtype,
                      {rows(mlp + "gate_proj." + kind, p.ff0, p.ff, 0), rows(mlp + "up_proj." + kind, p.ff0, p.ff, p.ff)});
    }
    m.add_parameter(mlp + "down_proj.weight", {D, p.ff}, dtype, {columns(mlp + "down_proj.weight", p.ff0, p.ff)});
    if (c.mlp_bias && p.rank == 0) whole(mlp + "down_proj.bias", D);
  }
  whole("model.norm.weight", D);
  if (!c.tie_word_embeddings)
    m.add_parameter("lm_head.weight", {p.vocab, D}, dtype, {rows("lm_head.weight", p.vocab0, p.vocab, 0)});
  return m;
}

}  // namespace wl
