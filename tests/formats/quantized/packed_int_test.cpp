// GPTQ (sequential and act-order g_idx, 4 and 8 bits, v1 and v2 zeros) and AWQ decoded by our
// kernels equal the formula computed here element by element.
#include <gtest/gtest.h>

#include <random>

#include "formats/quantized/dense_view.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::quant {
namespace {

struct Layer {
  std::vector<uint32_t> qweight, qzeros;
  std::vector<uint16_t> scales;
  std::vector<int32_t> g_idx;
};

MemoryTensor tensor(const std::string& name, DType dtype, Shape shape, const void* data) {
  return {name, dtype, std::move(shape), {}, data, nullptr};
}

std::vector<float> decode(const std::vector<MemoryTensor>& tensors, const QuantConfig& c) {
  auto view = dense_view(WeightSource::from_memory("<memory>", tensors), c, true);
  const TensorView w = view->load(view->at("l.weight"), DType::F32);
  const auto* f = reinterpret_cast<const float*>(w.raw());
  return {f, f + w.numel()};
}

// Random words, zeros and scales ([groups, out]) for `in` inputs; g_idx sequential or shuffled.
Layer random_layer(uint64_t qweight_words, uint64_t out, uint64_t zero_words, uint64_t groups, uint64_t in, bool shuffle) {
  std::mt19937 rng(11);
  Layer l;
  l.qweight.resize(qweight_words);
  for (uint32_t& w : l.qweight) w = rng();
  l.qzeros.resize(zero_words);
  for (uint32_t& z : l.qzeros) z = rng();
  l.scales.resize(groups * out);
  std::uniform_real_distribution<float> u(1e-3f, 2e-2f);
  for (uint16_t& s : l.scales) s = f32_to_f16_bits(u(rng));
  l.g_idx.resize(in);
  for (uint64_t i = 0; i < in; ++i) l.g_idx[i] = static_cast<int32_t>(i / (in / groups));
  if (shuffle) std::shuffle(l.g_idx.begin(), l.g_idx.end(), rng);
  return l;
}

void check_gptq(int bits, bool act_order, bool v1) {
  const uint64_t pack = 32 / static_cast<uint64_t>(bits), in = 256, out = 48, groups = 4;
  Layer l = random_layer(in / pack * out, out, groups * out / pack, groups, in, act_order);
  QuantConfig c;
  c.method = Method::Gptq, c.bits = bits, c.group_size = static_cast<int64_t>(in / groups), c.desc_act = act_order,
  c.zeros_minus_one = v1, c.origin = "test";
  const std::vector<float> got = decode({tensor("l.qweight", DType::I32, {in / pack, out}, l.qweight.data()),
                                         tensor("l.qzeros", DType::I32, {groups, out / pack}, l.qzeros.data()),
                                         tensor("l.scales", DType::F16, {groups, out}, l.scales.data()),
                                         tensor("l.g_idx", DType::I32, {in}, l.g_idx.data())},
                                        c);
  const uint32_t mask = (1u << bits) - 1;
  for (uint64_t o = 0; o < out; ++o)
    for (uint64_t i = 0; i < in; ++i) {
      const uint64_t g = static_cast<uint64_t>(l.g_idx[i]);
      const int q = static_cast<int>((l.qweight[(i / pack) * out + o] >> (bits * (i % pack))) & mask);
      const int z = static_cast<int>((l.qzeros[g * (out / pack) + o / pack] >> (bits * (o % pack))) & mask) + (v1 ? 1 : 0);
      const float want = static_cast<float>(q - z) * f16_bits_to_f32(l.scales[g * out + o]);
      ASSERT_EQ(got[o * in + i], want) << "bits " << bits << " act_order " << act_order << " at " << o << ", " << i;
    }
}

TEST(PackedInt, GptqEqualsTheFormula) {
  for (int bits : {2, 4, 8})
    for (bool act_order : {false, true})
      for (bool v1 : {true, false}) check_gptq(bits, act_order, v1);
}

TEST(PackedInt, GptqWithoutGIdxUsesGroupSize) {
  const uint64_t in = 128, out = 8;
  Layer l = random_layer(in / 8 * out, out, 2, 2, in, false);
  QuantConfig c;
  c.method = Method::Gptq, c.bits = 4, c.group_size = 64, c.origin = "test";
  const std::vector<MemoryTensor> base = {tensor("l.qweight", DType::I32, {in / 8, out}, l.qweight.data()),
                                          tensor("l.qzeros", DType::I32, {2, 1}, l.qzeros.data()),
                                          tensor("l.scales", DType::F16, {2, out}, l.scales.data())};
  std::vector<MemoryTensor> with_g = base;
  with_g.push_back(tensor("l.g_idx", DType::I32, {in}, l.g_idx.data()));
  EXPECT_EQ(decode(base, c), decode(with_g, c));
}

TEST(PackedInt, AwqEqualsTheFormula) {
  const uint64_t in = 256, out = 32, groups = 2;
  Layer l = random_layer(in * out / 8, out, groups * out / 8, groups, in, false);
  QuantConfig c;
  c.method = Method::Awq, c.bits = 4, c.group_size = 128, c.awq_version = "gemm", c.origin = "test";
  const std::vector<float> got = decode({tensor("l.qweight", DType::I32, {in, out / 8}, l.qweight.data()),
                                         tensor("l.qzeros", DType::I32, {groups, out / 8}, l.qzeros.data()),
                                         tensor("l.scales", DType::F16, {groups, out}, l.scales.data())},
                                        c);
  constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble k holds column kOrder[k] of its 8
  for (uint64_t o = 0; o < out; ++o)
    for (uint64_t i = 0; i < in; ++i) {
      int nibble = 0;
      while (kOrder[nibble] != static_cast<int>(o % 8)) ++nibble;
      const uint64_t g = i / 128;
      const int q = static_cast<int>((l.qweight[i * (out / 8) + o / 8] >> (4 * nibble)) & 15);
      const int z = static_cast<int>((l.qzeros[g * (out / 8) + o / 8] >> (4 * nibble)) & 15);
      ASSERT_EQ(got[o * in + i], static_cast<float>(q - z) * f16_bits_to_f32(l.scales[g * out + o])) << o << ", " << i;
    }
}

}  // namespace
}  // namespace wl::quant
