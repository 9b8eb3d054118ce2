// Rotary position embeddings as transformers computes them: the frequencies of each rope_scaling type
// (modeling_rope_utils.py, in F32 as there) and their application to a head.
#pragma once

#include <cstdint>
#include <vector>

#include "weightloader/engine/llama_config.hpp"

namespace wl {

// The frequencies of the rotary_dims() leading dimensions of a head, rope_scaling applied, for a
// forward pass over a sequence of `length` tokens (only dynamic and longrope scaling look at it).
// sliding: those of the layers sliding_rope_layer() names (sliding_rope_theta and _scaling, when set).
std::vector<float> rotary_frequencies(const LlamaConfig& config, uint64_t length = 0, bool sliding = false);

// What cos and sin are multiplied by (yarn's and longrope's attention factor; 1 otherwise).
float rotary_attention_factor(const LlamaConfig& config, bool sliding = false);

// Hugging Face's rotary layout over the leading 2 * cos.size() dimensions of each head: element j
// turns with element j + cos.size(); the rest of the head passes through.
void rope(float* v, uint64_t heads, uint64_t head_dim, const std::vector<float>& cos, const std::vector<float>& sin);

// DeepSeek's layout over the leading 2 * cos.size() dimensions of each head (`stride` floats
// apart): elements 2j and 2j + 1 turn together with frequency j (V2's complex product; V3's
// rope_interleave, which also de-interleaves them afterwards, the same for queries and keys alike,
// so that their products are these).
void rope_adjacent_pairs(float* v, uint64_t heads, uint64_t stride, const std::vector<float>& cos, const std::vector<float>& sin);

}  // namespace wl
