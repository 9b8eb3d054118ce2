// Rotary position embeddings: each rope_scaling type's frequencies and attention factor against the
// values transformers computes, and the engine's rule for when they change with the sequence length.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include <nlohmann/json.hpp>

#include "engine/rotary.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {
namespace {

LlamaConfig rotary(uint64_t head_dim, double theta) {
  LlamaConfig c;
  c.head_dim = head_dim;
  c.rope_theta = theta;
  return c;
}

TEST(Rotary, Llama3LinearAndPartialRotary) {
  // Llama 3.1 8B: theta 500000, head_dim 128, factor 8 over an original context of 8192.
  LlamaConfig c = rotary(128, 500000.0);
  const std::vector<float> plain = rotary_frequencies(c);
  c.rope_scaling.type = "llama3";  // factor 8, low 1, high 4 as Llama 3.1 sets them
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.original_max_position_embeddings = 8192;
  const std::vector<float> scaled = rotary_frequencies(c);
  ASSERT_EQ(scaled.size(), 64u);
  EXPECT_EQ(scaled[0], plain[0]);                          // wavelength 2*pi: under 8192 / 4, kept
  EXPECT_FLOAT_EQ(scaled[63], plain[63] / 8);              // longer than 8192: slowed by the factor
  const double wavelen = 2 * std::numbers::pi / plain[30];  // inside the band: a blend of both
  ASSERT_TRUE(wavelen > 2048 && wavelen < 8192) << wavelen;
  EXPECT_LT(scaled[30], plain[30]);
  EXPECT_GT(scaled[30], plain[30] / 8);
  c.rope_scaling = RopeScaling{};
  c.rope_scaling.type = "linear";
  c.rope_scaling.factor = 4.0;
  EXPECT_FLOAT_EQ(rotary_frequencies(c)[10], plain[10] / 4);
  EXPECT_EQ(rotary_attention_factor(c), 1.0f);
  // Partial rotary: frequencies over the rotary dimensions only.
  c = rotary(8, 10000.0);
  c.rotary_dim = 6;
  const std::vector<float> partial = rotary_frequencies(c);
  ASSERT_EQ(partial.size(), 3u);
  EXPECT_FLOAT_EQ(partial[1], float(std::pow(10000.0, -2.0 / 6)));
}

constexpr const char* kLongrope = R"({"model_type": "phi3", "hidden_size": 32, "num_attention_heads": 4, "partial_rotary_factor": 0.75,
    "rope_theta": 10000.0, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
    "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0, 1.01, 1.02], "long_factor": [1.5, 3.5, 5.5]}})";
constexpr const char* kDynamic = R"({"hidden_size": 256, "num_attention_heads": 4, "rope_theta": 10000.0,
    "max_position_embeddings": 2048, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})";

struct Reference {
  const char* what;
  const char* config_json;
  uint64_t length;
  double attention_factor;
  std::vector<float> frequencies;
};

// Expected values: transformers' own _compute_yarn_parameters, _compute_longrope_parameters and
// _compute_dynamic_ntk_parameters (src/transformers/modeling_rope_utils.py, the version with yarn's
// mscale and truncate), run under Debian's torch 1.13 outside this repository on these configurations.
const std::vector<Reference>& references() {
  static const std::vector<Reference> all{
      {"yarn as Qwen2.5 enables it",
       R"({"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
           "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})",
       0, 1.138629436111989, {1, 0.649381638, 0.421696514, 0.273841977, 0.177827939, 0.115478203, 0.0749894157, 0.0486967526, 0.0316227786, 0.0205352511, 0.0133352149, 0.00865964312, 0.00515479548, 0.0030431177, 0.00177853031, 0.00102661771, 0.000583333371, 0.000324690831, 0.000175706868, 9.12806499e-05, 4.44569851e-05, 2.88695483e-05, 1.87473561e-05, 1.21741887e-05, 7.90569356e-06, 5.13381246e-06, 3.33380353e-06, 2.16491094e-06, 1.40585337e-06, 9.1293532e-07, 5.92843435e-07, 3.84981632e-07}},
      {"yarn with DeepSeek's mscale pair",
       R"({"hidden_size": 256, "num_attention_heads": 4, "rope_theta": 10000.0, "max_position_embeddings": 163840,
           "rope_scaling": {"rope_type": "yarn", "factor": 40.0, "mscale": 0.707, "mscale_all_dim": 1.0, "beta_fast": 32.0,
                            "beta_slow": 1.0, "original_max_position_embeddings": 4096}})",
       0, 0.9210423553163399, {1, 0.749894202, 0.562341332, 0.421696514, 0.316227764, 0.237137362, 0.177827939, 0.133352146, 0.100000001, 0.0749894157, 0.0562341288, 0.0390069261, 0.0268793609, 0.0183781441, 0.012447956, 0.0083345091, 0.00550000044, 0.00356199732, 0.00224936521, 0.00137051346, 0.000790569407, 0.000414990413, 0.00017782794, 3.3338034e-05, 2.49999994e-05, 1.87473543e-05, 1.40585325e-05, 1.05424124e-05, 7.90569447e-06, 5.92843435e-06, 4.44569832e-06, 3.33380353e-06}},
      {"yarn without truncation (gpt-oss)",
       R"({"hidden_size": 256, "num_attention_heads": 4, "rope_theta": 150000.0, "max_position_embeddings": 131072,
           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false,
                            "original_max_position_embeddings": 4096}})",
       0, 1.3465735902799727, {1, 0.689044297, 0.47478205, 0.327145875, 0.225418001, 0.155322984, 0.107024424, 0.0737445652, 0.0508132726, 0.0317056961, 0.0193349998, 0.0115920492, 0.00679495931, 0.00386035908, 0.00209379266, 0.00105260219, 0.000456483918, 0.000129318694, 3.83088118e-05, 2.63964685e-05, 1.8188337e-05, 1.25325696e-05, 8.63549576e-06, 5.95023948e-06, 4.09997847e-06, 2.82506676e-06, 1.94659629e-06, 1.34129095e-06, 9.24208962e-07, 6.36820914e-07, 4.38797855e-07, 3.0235114e-07}},
      {"longrope at the pretrained context (short factors)", kLongrope, 4096, 1.1902380714238083, {1, 0.0459563211, 0.00211219047}},
      {"longrope past it (long factors)", kLongrope, 4097, 1.1902380714238083, {0.666666687, 0.0132616796, 0.000391715323}},
      {"dynamic within the context", kDynamic, 1000, 1.0, {1, 0.749894202, 0.562341332, 0.421696514, 0.316227764, 0.237137362, 0.177827939, 0.133352146, 0.100000001, 0.0749894157, 0.0562341288, 0.0421696492, 0.0316227786, 0.0237137359, 0.0177827943, 0.0133352149, 0.00999999978, 0.00749894232, 0.00562341325, 0.00421696482, 0.00316227786, 0.00237137382, 0.00177827943, 0.00133352145, 0.00100000005, 0.000749894185, 0.000562341302, 0.000421696488, 0.000316227786, 0.000237137385, 0.00017782794, 0.00013335215}},
      {"dynamic beyond it", kDynamic, 3000, 1.0, {1, 0.734160006, 0.538990974, 0.39570564, 0.29051125, 0.213281766, 0.156582937, 0.114956945, 0.0843967944, 0.0619607568, 0.0454891101, 0.033396285, 0.0245182198, 0.0180002954, 0.0132150985, 0.00970199704, 0.00712281885, 0.00522928871, 0.00383913494, 0.00281853951, 0.00206925906, 0.00151916721, 0.00111531187, 0.000818817469, 0.000601143052, 0.000441335229, 0.000324010674, 0.000237875691, 0.00017463883, 0.000128212851, 9.41287435e-05, 6.91055684e-05}},
  };
  return all;
}

// A whole config.json around the rotary fields (sizes that do not matter here).
LlamaConfig with_sizes(const char* rotary_fields) {
  nlohmann::json j = nlohmann::json::parse(rotary_fields);
  const nlohmann::json sizes{{"model_type", "llama"}, {"intermediate_size", 64}, {"num_hidden_layers", 1}, {"vocab_size", 16}};
  for (const auto& [key, value] : sizes.items())
    if (!j.contains(key)) j[key] = value;
  return llama_config_from_hf_json(j.dump(), "config.json");
}

TEST(Rotary, EveryScalingTypeMatchesTransformers) {
  for (const Reference& r : references()) {
    SCOPED_TRACE(r.what);
    const LlamaConfig c = with_sizes(r.config_json);
    const std::vector<float> got = rotary_frequencies(c, r.length);
    ASSERT_EQ(got.size(), r.frequencies.size());
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], r.frequencies[j], 4e-7 * r.frequencies[j]) << "frequency " << j;
    EXPECT_FLOAT_EQ(rotary_attention_factor(c), float(r.attention_factor));
    // Written back as config.json (convert's outputs), it reads as the same scaling.
    EXPECT_EQ(llama_config_from_hf_json(c.to_hf_config_json(), "again").rope_scaling, c.rope_scaling);
  }
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

// DeepSeek's layout: element 2j turns with 2j + 1 by frequency j, as the complex product
// (x[2j] + i x[2j+1]) (cos + i sin) of DeepSeek-V2; the rest of the stride is left alone.
TEST(Rotary, AdjacentPairsAsAComplexProduct) {
  const std::vector<float> cos{std::cos(0.5f), std::cos(0.25f)}, sin{std::sin(0.5f), std::sin(0.25f)};
  const std::vector<float> given{1, 2, 3, 4, 9, 5, 6, 7, 8, 9};  // two heads of 4 rotary dimensions, a stride of 5
  std::vector<float> v = given;
  rope_adjacent_pairs(v.data(), 2, 5, cos, sin);
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 2; ++j) {
      const std::complex<float> x(given[5 * h + 2 * j], given[5 * h + 2 * j + 1]);
      const std::complex<float> want = x * std::complex<float>(cos[j], sin[j]);
      EXPECT_FLOAT_EQ(v[5 * h + 2 * j], want.real());
      EXPECT_FLOAT_EQ(v[5 * h + 2 * j + 1], want.imag());
    }
  EXPECT_EQ(v[4], 9.0f);
  EXPECT_EQ(v[9], 9.0f);
}

}  // namespace
}  // namespace wl
