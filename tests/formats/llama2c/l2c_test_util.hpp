// Helpers for the llama2.c tests: hand-made headers, small models, and values read back.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/source.hpp"

namespace wl::test {

using Fields = std::array<int32_t, 7>;  // dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len

template <typename T>
void append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// The 28 bytes of a v0 header.
inline std::string v0_header(const Fields& f) {
  std::string out;
  for (int32_t v : f) append(out, v);
  return out;
}

// The 256 bytes of a v1/v2 header, written by hand as llama2.c's export.py lays it out.
inline std::string magic_header(int32_t version, const Fields& f, uint8_t shared, int32_t group_size = 0) {
  std::string out;
  append<uint32_t>(out, 0x616b3432);
  append(out, version);
  for (int32_t v : f) append(out, v);
  append(out, shared);
  if (version == 2) append(out, group_size);
  out.resize(256, '\0');
  return out;
}

// Float32 count of a v0/v1 body, computed here independently of the library's layout.
inline uint64_t f32_body_floats(const Fields& f, bool shared, bool rope_tables) {
  const uint64_t dim = f[0], hidden = f[1], layers = f[2], heads = f[3], kv_heads = f[4];
  const uint64_t vocab = static_cast<uint64_t>(f[5] < 0 ? -int64_t{f[5]} : f[5]), seq = f[6];
  const uint64_t head = dim / heads, kv = kv_heads * head;
  uint64_t n = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hidden * dim) + dim;
  if (rope_tables) n += seq * head;  // two tables of seq × head/2
  if (!shared) n += vocab * dim;
  return n;
}

// Every tensor of a catalogue, loaded as float32.
inline std::map<std::string, std::vector<float>> load_all(const Catalogue& c) {
  const WeightSource source("llama2c", "test", c);
  std::map<std::string, std::vector<float>> out;
  for (const TensorInfo& t : source.tensors()) {
    std::vector<float> v(t.numel());
    source.read(t, DType::F32, v.data());
    out[t.name] = std::move(v);
  }
  return out;
}

// One float32 read straight from a file's bytes at `offset`.
inline float float_at(const std::string& bytes, uint64_t offset) {
  float v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// Hugging Face tensors for `h`, filled by `fill(name, index)`.
template <typename Fill>
std::vector<std::pair<std::string, TensorView>> hf_tensors(const Llama2cHeader& h, Fill fill) {
  std::vector<std::pair<std::string, Shape>> shapes = {{"model.embed_tokens.weight", {h.vocab_size, h.dim}},
                                                       {"model.norm.weight", {h.dim}}};
  for (uint64_t l = 0; l < h.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    shapes.push_back({p + "input_layernorm.weight", {h.dim}});
    shapes.push_back({p + "self_attn.q_proj.weight", {h.dim, h.dim}});
    shapes.push_back({p + "self_attn.k_proj.weight", {h.kv_dim(), h.dim}});
    shapes.push_back({p + "self_attn.v_proj.weight", {h.kv_dim(), h.dim}});
    shapes.push_back({p + "self_attn.o_proj.weight", {h.dim, h.dim}});
    shapes.push_back({p + "post_attention_layernorm.weight", {h.dim}});
    shapes.push_back({p + "mlp.gate_proj.weight", {h.hidden_dim, h.dim}});
    shapes.push_back({p + "mlp.down_proj.weight", {h.dim, h.hidden_dim}});
    shapes.push_back({p + "mlp.up_proj.weight", {h.hidden_dim, h.dim}});
  }
  if (!h.shared_classifier) shapes.push_back({"lm_head.weight", {h.vocab_size, h.dim}});
  std::vector<std::pair<std::string, TensorView>> out;
  for (const auto& [name, shape] : shapes) {
    TensorView t = TensorView::empty(DType::F32, shape);
    for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = fill(name, i);
    out.emplace_back(name, t);
  }
  return out;
}

// A small header every test can start from: GQA, hidden_dim not a multiple of dim.
inline Llama2cHeader tiny_header(int version, bool shared) {
  Llama2cHeader h;
  h.version = version;
  h.dim = 16;
  h.hidden_dim = 24;
  h.n_layers = 2;
  h.n_heads = 4;
  h.n_kv_heads = 2;
  h.vocab_size = 10;
  h.seq_len = 6;
  h.shared_classifier = shared;
  h.group_size = version == 2 ? 8 : 0;
  return h;
}

inline std::string stories_path() {
  return (testdata_dir() / "llama2c-stories260K" / "stories260K.bin").string();
}

}  // namespace wl::test
