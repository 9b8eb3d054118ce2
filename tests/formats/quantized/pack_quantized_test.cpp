// compressed-tensors pack-quantized layers decoded against values compressed-tensors' own code gave:
// the packed words come from its pack_to_int32 (compressors/pack_quantized/helpers.py of
// vllm-project/compressed-tensors at ac8e2ba8, run under Debian's torch outside this repository, and
// checked there to unpack back with its unpack_from_int32), the dense values from its dequantisation
// ((x_q.to(scale.dtype) - zero_point) * scale per group, g_idx order, as _dequantize and _process_group
// compute it). BF16 scales: the reference is BF16 (compressed-tensors computes in the scale's dtype),
// what our F32 decoding gives rounded once.
// naive-quantized / int-quantized: int8 weights [5, 12] and their scales (BF16 per channel, F16 per
// group of 4 with int8 zero points, one BF16 for the tensor) through compressed-tensors' own
// quantization/lifecycle/forward.py dequantize (at ac8e2ba8; it infers the strategy from the
// scale's shape and computes in the scale's dtype), run the same way.
#include <gtest/gtest.h>

#include <cstring>

#include "formats/quantized/dense_view.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"

namespace wl::quant {
namespace {

struct Case {
  const char* what;
  int bits;
  uint64_t out, in;
  int64_t group_size;
  bool sym;
  const char* strategy;
  DType scale_dtype;  // BF16 (bits in `scale` and `dense`) or F32 (values)
  std::vector<uint32_t> packed;
  std::vector<double> scale;
  std::vector<uint64_t> zero_shape;
  std::vector<uint32_t> zero_point;
  std::vector<int32_t> g_idx;
  std::vector<double> dense;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {"w4a16 group, bf16 scales", 4, 4, 32, 16, true, "group",
       DType::BF16,
       {0x5b9f8cb5, 0xcd7c100f, 0x425e4296, 0x42edcacb, 0x60e71977, 0x96df799d, 0x3d881c01, 0x637e89af, 0xb1843915, 0x293d04ac, 0x772f940f, 0xe739689a, 0x6395b4d7, 0x7ff7a208, 0x0eeac379, 0x03d11778},
       {0x3c89, 0x3ca6, 0x3b9d, 0x3c58, 0x3ca1, 0x3c90, 0x3c8d, 0x3c94},
       {0, 0}, {},
       {},
       {0xbd4e, 0x3d4e, 0x3d89, 0x0000, 0x3df0, 0x3c89, 0x3d4e, 0xbd4e, 0x3df0, 0xbe09, 0xbe09, 0xbdf0, 0x3d89, 0xbc89, 0x3dab, 0x3d89, 0xbd26, 0x3ca6, 0xbdf9, 0xbda6, 0x3df9, 0xbd79, 0xbdf9, 0xbda6, 0x3d79, 0x3da6, 0x3d26, 0x3da6, 0x3dd0, 0x3df9, 0xbdf9, 0xbda6, 0xbb9d, 0xbb9d, 0x3b9d, 0xbd09, 0xbb9d, 0x3cec, 0xbd1d, 0xbc1d, 0x3cc4, 0x3b9d, 0x3b9d, 0xbb9d, 0x3d09, 0x3cc4, 0xbc1d, 0x3b9d, 0xbdbd, 0xbdd8, 0x3d58, 0xbdbd, 0x0000, 0x0000, 0x3d87, 0xbd87, 0x3dbd, 0x3cd8, 0x3c58, 0x0000, 0x3da2, 0xbc58, 0xbd87, 0xbcd8, 0xbd72, 0xbe0d, 0x3ca1, 0xbdc9, 0xbda1, 0x0000, 0xbe0d, 0x3d72, 0x3da1, 0x3d21, 0xbda1, 0xbe21, 0x3dc9, 0xbdc9, 0x3ca1, 0xbdf2, 0x3dfc, 0xbe10, 0xbd90, 0x3c90, 0x3dfc, 0xbdd8, 0xbc90, 0xbc90, 0x3d10, 0x3c90, 0x0000, 0xbd10, 0x3c90, 0xbdb4, 0xbc90, 0x3dd8, 0xbc8d, 0x3db0, 0xbd8d, 0x3d54, 0xbd54, 0x3c8d, 0xbdb0, 0xbd0d, 0x0000, 0xbe0d, 0xbdd4, 0x3d0d, 0xbc8d, 0x3df7, 0x3df7, 0xbc8d, 0x3c94, 0xbc94, 0xbdb9, 0x3d94, 0x3d14, 0x3dde, 0x3dde, 0xbe14, 0x0000, 0xbc94, 0xbc94, 0xbe02, 0xbe02, 0x3db9, 0xbdb9, 0xbe14}},
      {"w4 asym group (packed zero points)", 4, 8, 32, 16, false, "group",
       DType::F32,
       {0xb2b68df8, 0xf5bf1278, 0x754c4aff, 0x673ba463, 0x853fca1a, 0x2f93f6e4, 0xfa42ce40, 0xd28ef71f, 0x6178d9fa, 0xce9995a8, 0x2a0b03ea, 0x9c28aec8, 0x28366656, 0xd96d1841, 0xb67a4215, 0x0b3a8a54, 0x0db5b750, 0xef1b5a68, 0x34ffb7ad, 0x0bfa41b6, 0xbf4c5a8e, 0x1291792e, 0xc8170ebf, 0xfeeeb9be, 0x52ab5070, 0x13cd3f1a, 0xb1bf86b8, 0xfc907fb5, 0xa02f951a, 0x8d1f3640, 0x78724595, 0x83684ab3},
       {0.0122822057, 0.0175959114, 0.0199071057, 0.0170789361, 0.00887481403, 0.00655059796, 0.0138297267, 0.0191346444, 0.00141283008, 0.0136844199, 0.00329110958, 0.00304989191, 0.014618475, 0.016086828, 0.0144237122, 0.0139081404},
       {1, 2}, {0x7a8551cd, 0x53e40c6c},
       {},
       {-0.0614110306, 0.0245644115, 0, -0.0614110306, -0.0859754384, -0.0245644115, -0.135104269, -0.0245644115, -0.0614110306, -0.0736932307, -0.135104269, -0.147386461, 0.0245644115, -0.0245644115, -0.098257646, 0.0245644115, 0.0527877361, 0.0527877361, -0.0351918228, -0.140767291, 0, -0.140767291, -0.123171382, -0.0879795551, -0.158363208, -0.105575472, -0.140767291, -0.0351918228, -0.0175959114, -0.158363208, -0.0879795551, -0.105575472, -0.0398142114, -0.218978167, -0.0398142114, 0, 0.0597213171, -0.179163948, -0.139349744, -0.0796284229, -0.159256846, 0.0398142114, -0.119442634, 0.0597213171, -0.179163948, -0.0597213171, 0.0597213171, -0.19907105, -0.102473617, -0.0341578722, 0.136631489, 0.102473617, -0.0683157444, -0.0341578722, 0.0683157444, 0.153710425, 0.153710425, -0.0853946805, 0.0170789361, 0.153710425, 0.136631489, 0.0341578722, -0.0683157444, 0.119552553, 0.0798733234, 0.124247395, 0.0709985122, 0.106497765, 0.0621236973, 0.0532488823, 0, 0.0443740711, 0.0621236973, 0.0798733234, 0.0354992561, 0.0709985122, 0.0709985122, 0.0709985122, 0.115372583, 0.0976229534, -0.0131011959, 0.0131011959, -0.0589553826, -0.0786071718, -0.00655059796, -0.0786071718, -0.0131011959, -0.0655059814, -0.0262023918, 0, 0.0131011959, -0.0131011959, -0.0262023918, -0.0655059814, 0, -0.0196517929, 0.0138297267, 0, 0.0138297267, 0.0138297267, 0.0138297267, -0.0276594535, 0.0414891802, -0.0414891802, -0.0553189069, -0.0138297267, 0.0414891802, -0.0553189069, 0.110637814, 0.0138297267, 0.0553189069, 0.110637814, 0.0956732184, 0.0191346444, 0.0382692888, 0.0765385777, 0.191346437, 0.133942515, 0.114807867, 0.210481092, 0.0765385777, 0.0956732184, 0.191346437, 0.153077155, 0.191346437, 0.0574039333, 0.210481092, 0, -0.00706415065, 0, 0.00282566017, 0.00847698003, 0, 0.00847698003, 0.0113026407, -0.00706415065, 0.00423849002, 0.00141283008, 0.00706415065, 0, 0.00847698003, -0.00565132033, 0.0141283013, 0.012715471, 0.123159781, 0.0821065158, 0.0410532579, 0.0957909375, 0.150528625, 0.150528625, 0, -0.0136844199, 0.0273688398, 0.0957909375, -0.0410532579, 0, 0.0821065158, 0.150528625, 0.0957909375, -0.0547376797, 0.0197466575, 0, 0.00658221915, -0.00987332873, 0.0131644383, -0.0131644383, 0.023037767, 0.00987332873, 0.0197466575, -0.0197466575, 0.00329110958, -0.00329110958, -0.023037767, 0.00329110958, -0.0197466575, -0.023037767, 0.00304989191, -0.00914967619, 0, -0.0426984876, -0.0213492438, -0.0396485962, -0.0182993524, -0.00609978382, 0, -0.00914967619, -0.0152494591, -0.00914967619, 0, 0, 0, 0.00304989191, -0.146184742, -0.043855425, -0.146184742, -0.0730923712, 0.014618475, 0, -0.1169478, -0.0730923712, 0, -0.131566271, 0.0730923712, -0.102329329, 0.043855425, 0.02923695, -0.102329329, -0.131566271, 0.0804341435, 0.128694624, 0.0482604839, 0.0804341435, 0.193041936, 0.128694624, -0.0321736559, 0.128694624, 0.0321736559, 0.128694624, 0.193041936, 0.0643473119, -0.0482604839, 0.0965209678, 0.144781455, 0.193041936, 0.0432711355, -0.0865422711, -0.0288474243, 0.0288474243, 0.115389697, -0.072118558, -0.100965984, 0.0432711355, -0.100965984, -0.0432711355, -0.0144237122, -0.0576948486, 0.115389697, -0.0865422711, 0.0865422711, 0.0144237122, 0, 0.0556325614, 0, -0.0139081404, -0.0417244211, 0.0278162807, 0.0417244211, 0.0278162807, -0.0278162807, 0.0834488422, 0.0695407018, -0.0139081404, 0.0417244211, 0.0139081404, -0.0278162807, 0.0417244211}},
      {"w3 channel: values straddle words", 3, 3, 32, -1, true, "channel",
       DType::F32,
       {0x9da00642, 0xc837a896, 0xe96450de, 0x153854cc, 0x51d963e6, 0x1bc9bd3a, 0x6f02f888, 0x46bda49d, 0x6900386e},
       {0.00424484722, 0.0165186077, 0.00866506062},
       {0, 0}, {},
       {},
       {-0.00848969445, -0.0169793889, -0.0127345417, -0.00424484722, -0.0169793889, -0.0169793889, -0.0169793889, 0.00424484722, 0.00424484722, -0.00424484722, -0.00848969445, -0.00424484722, -0.0127345417, -0.0127345417, -0.00848969445, 0.00424484722, 0.0127345417, 0.00848969445, -0.0169793889, 0, 0, 0.00424484722, 0.0127345417, 0.00848969445, -0.0169793889, -0.00848969445, -0.0127345417, -0.00848969445, 0.00848969445, -0.00848969445, -0.00848969445, 0.0127345417, 0, -0.0495558232, -0.0165186077, -0.0330372155, 0.0165186077, -0.0660744309, 0.0330372155, -0.0495558232, 0.0165186077, -0.0330372155, -0.0660744309, -0.0165186077, 0.0330372155, 0.0495558232, -0.0660744309, -0.0165186077, -0.0495558232, -0.0165186077, 0.0495558232, -0.0660744309, 0.0165186077, 0, 0.0330372155, -0.0495558232, 0.0165186077, 0.0495558232, 0.0330372155, 0, 0, 0.0495558232, 0.0330372155, -0.0660744309, -0.0346602425, -0.0259951819, -0.0173301212, 0, 0.0259951819, 0.00866506062, -0.0346602425, -0.0346602425, 0.0259951819, 0.00866506062, 0.00866506062, 0.0173301212, -0.0259951819, -0.0259951819, -0.0259951819, 0.00866506062, 0.00866506062, 0.0259951819, -0.0173301212, -0.00866506062, 0, 0, -0.00866506062, -0.00866506062, -0.0346602425, 0.0259951819, -0.0346602425, -0.0346602425, -0.0346602425, -0.0173301212, -0.0173301212, -0.00866506062}},
      {"w8 channel asym", 8, 2, 8, -1, false, "channel",
       DType::F32,
       {0xc5b7ae7a, 0xc8576881, 0xfc3a8932, 0x375e6d67},
       {0.0162696876, 0.00527405506},
       {1, 1}, {0x0000a468},
       {},
       {0.292854369, 1.13887811, 1.28530526, 1.51308095, 0.406742185, 0, -0.276584685, 1.56189001, -0.601242304, -0.14239949, -0.559049845, 0.464116842, -0.321717352, -0.290073037, -0.369183868, -0.574872017}},
      {"w4 group actorder (g_idx)", 4, 2, 32, 8, true, "group",
       DType::F32,
       {0x9066dfe3, 0x0e0be748, 0xb0751fc7, 0x64ef1bdc, 0x99a99e2d, 0xa5e0721e, 0xb394e400, 0x2339642f},
       {0.00419929251, 0.0190813467, 0.0121146627, 0.0155591397, 0.0184174255, 0.00452002743, 0.0186338555, 0.00599046098},
       {0, 0}, {},
       {1, 3, 0, 2, 3, 1, 3, 0, 2, 2, 0, 0, 2, 1, 2, 2, 3, 1, 1, 2, 0, 3, 3, 0, 1, 2, 0, 3, 1, 3, 1, 0},
       {-0.0954067335, 0.0933548361, 0.0293950476, 0.0605733134, -0.0311182793, -0.0381626934, -0.124473117, 0.00419929251, 0, -0.0484586507, -0.00419929251, 0.0251957551, 0.036343988, -0.152650774, 0.0726879761, -0.0969173014, -0.0155591397, 0.0763253868, 0.133569419, -0.0848026425, -0.0125978775, -0.0155591397, -0.124473117, 0.0125978775, 0.0763253868, 0.0605733134, 0.0125978775, -0.10891398, 0.133569419, 0.0933548361, -0.0763253868, -0.00839858502, 0.0226001367, -0.0359427668, 0.110504553, 0.0186338555, 0.00599046098, 0.00904005487, 0.00599046098, 0.0184174255, 0.111803129, -0.130436987, -0.110504553, -0.0184174255, -0.149070844, 0.0271201655, -0.0559015647, 0.037267711, -0.0479236878, -0.0361602195, -0.0180801097, 0.111803129, -0.0736697018, 0.00599046098, -0.0299523044, 0.0552522764, 0.0316401906, -0.111803129, -0.0736697018, -0.011980922, 0.00452002743, -0.0299523044, -0.0226001367, -0.110504553}},
  };
  return all;
}

QuantConfig config_of(const Case& c) {
  QuantConfig q;
  q.method = Method::CompressedTensors, q.ct_format = "pack-quantized", q.ct_strategy = c.strategy, q.bits = c.bits;
  q.group_size = c.group_size, q.sym = c.sym, q.origin = "config.json";
  return q;
}

// The case's layer "l" as a checkpoint in memory; `storage` keeps the tensors' bytes.
std::unique_ptr<WeightSource> layer_source(const Case& c, std::vector<std::vector<std::byte>>& storage) {
  auto bytes = [&](const void* p, size_t n) {
    storage.emplace_back(n);
    std::memcpy(storage.back().data(), p, n);
    return storage.back().data();
  };
  const uint64_t groups = c.scale.size() / c.out;
  std::vector<MemoryTensor> t;
  t.push_back({"l.weight_packed", DType::I32, {c.out, c.packed.size() / c.out}, {}, bytes(c.packed.data(), c.packed.size() * 4), nullptr});
  if (c.scale_dtype == DType::BF16) {
    std::vector<uint16_t> s(c.scale.begin(), c.scale.end());
    t.push_back({"l.weight_scale", DType::BF16, {c.out, groups}, {}, bytes(s.data(), s.size() * 2), nullptr});
  } else {
    std::vector<float> s(c.scale.begin(), c.scale.end());
    t.push_back({"l.weight_scale", DType::F32, {c.out, groups}, {}, bytes(s.data(), s.size() * 4), nullptr});
  }
  const int64_t shape[2] = {static_cast<int64_t>(c.out), static_cast<int64_t>(c.in)};
  t.push_back({"l.weight_shape", DType::I64, {2}, {}, bytes(shape, sizeof shape), nullptr});
  if (!c.zero_point.empty())
    t.push_back({"l.weight_zero_point", DType::I32, c.zero_shape, {}, bytes(c.zero_point.data(), c.zero_point.size() * 4), nullptr});
  if (!c.g_idx.empty()) t.push_back({"l.weight_g_idx", DType::I32, {c.in}, {}, bytes(c.g_idx.data(), c.g_idx.size() * 4), nullptr});
  return WeightSource::from_memory("<memory>", t);
}

TEST(PackQuantized, DecodesAsCompressedTensorsDequantizes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    std::vector<std::vector<std::byte>> storage;
    auto view = dense_view(layer_source(c, storage), config_of(c), true);
    ASSERT_EQ(view->tensors().size(), 1u);  // the packed tensors stand for one dense weight
    const TensorInfo& w = view->at("l.weight");
    EXPECT_EQ(w.shape, (Shape{c.out, c.in}));
    const TensorView got = view->load(w, c.scale_dtype);
    ASSERT_EQ(got.numel(), c.dense.size());
    for (size_t k = 0; k < c.dense.size(); ++k) {
      if (c.scale_dtype == DType::BF16)
        ASSERT_EQ(reinterpret_cast<const uint16_t*>(got.raw())[k], static_cast<uint16_t>(c.dense[k])) << "element " << k;
      else
        ASSERT_EQ(reinterpret_cast<const float*>(got.raw())[k], static_cast<float>(c.dense[k])) << "element " << k;
    }
  }
}

TEST(PackQuantized, InconsistentLayersNameTheTensorAndTheRule) {
  const Case& base = cases()[1];  // asymmetric, grouped
  struct Hostile {
    const char* what;
    void (*change)(Case&);
    const char* tensor;
  };
  const Hostile hostile[] = {
      {"a row short of words", [](Case& c) { c.packed.resize(c.packed.size() - c.out); }, "l.weight_packed"},
      {"group size that does not divide", [](Case& c) { c.group_size = 12; }, "l.weight_scale"},
      {"zero points for other rows", [](Case& c) { c.zero_shape = {2, 2}; c.zero_point.resize(4); }, "l.weight_zero_point"},
      {"asymmetric without zero points", [](Case& c) { c.zero_point.clear(); }, "l.weight_packed"},
  };
  for (const Hostile& h : hostile) {
    SCOPED_TRACE(h.what);
    Case c = base;
    h.change(c);
    std::vector<std::vector<std::byte>> storage;
    const std::string msg = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] {
      auto view = dense_view(layer_source(c, storage), config_of(c), true);
      view->load(view->at("l.weight"), DType::F32);
    });
    EXPECT_NE(msg.find(h.tensor), std::string::npos) << msg;
  }
}

const std::vector<int8_t> kNaiveQ = {
     101, -32, -90, 28, 28, 111, -126, -43, -6, -66, -5, -18, 31, 16, -121, -112,
     -57, -54, -127, -108, -5, 22, 86, 127, -8, -16, 86, -90, 45, 118, 47, -72,
     -75, -120, -59, 100, 125, 95, 62, 5, 67, 118, -27, 119, -18, -79, -72, 31,
     39, -79, -37, 54, -36, -78, 97, -127, -62, 119, -117, 50};

struct NaiveCase {
  const char* what;
  const char* strategy;
  int64_t group_size;
  DType scale_dtype;              // also the reference's dtype
  std::vector<uint16_t> scale;    // bits, [5, groups]
  std::vector<int8_t> zero_point;  // [5, groups]; empty: symmetric
  std::vector<uint16_t> dense;    // bits
};

const std::vector<NaiveCase>& naive_cases() {
  static const std::vector<NaiveCase> all{
      {"channel, BF16 scales", "channel", -1, DType::BF16, {
     0x3b0a, 0x3b64, 0x3b6b, 0x3b70, 0x3ba1}, {}, {
     0x3e5a, 0xbd8a, 0xbe42, 0x3d72, 0x3d72, 0x3e6f, 0xbe88, 0xbdb9, 0xbc4f, 0xbe0e, 0xbc2c, 0xbd1b,
     0x3ddd, 0x3d64, 0xbed8, 0xbec8, 0xbe4b, 0xbe40, 0xbee2, 0xbec0, 0xbc8e, 0x3d9d, 0x3e99, 0x3ee2,
     0xbceb, 0xbd6b, 0x3e9e, 0xbea5, 0x3e25, 0x3ed9, 0x3e2d, 0xbe84, 0xbe8a, 0xbedc, 0xbe59, 0x3eb8,
     0x3eea, 0x3eb2, 0x3e68, 0x3c96, 0x3e7b, 0x3edd, 0xbdca, 0x3edf, 0xbd87, 0xbe94, 0xbe87, 0x3de8,
     0x3e44, 0xbec7, 0xbe3a, 0x3e88, 0xbe35, 0xbec4, 0x3ef4, 0xbf20, 0xbe9c, 0x3f16, 0xbf13, 0x3e7c}},
      {"asymmetric groups of 4, F16 scales, int8 zero points", "group", 4, DType::F16, {
     0x1cd5, 0x1f35, 0x20c7, 0x1c51, 0x2120, 0x2174, 0x1c0c, 0x1eca, 0x1da8, 0x1bc3, 0x1d8b, 0x2102,
     0x1f46, 0x18dc, 0x20eb}, {
     5, -8, -6, 3, -1, -3, -4, -8, -3, 2, -6, -8, -7, 5, 0}, {
     0x3740, 0xb196, 0xb72c, 0x2ef2, 0x340e, 0x3ab3, 0xbaa5, 0xb3e2, 0x0000, 0xb87b, 0x20c7, 0xaf2a,
     0x2f8e, 0x2b04, 0xb82e, 0xb7c2, 0xb87c, 0xb83e, 0xbd0c, 0xbc49, 0xa574, 0x3443, 0x3b95, 0x3d8a,
     0xa40c, 0xaa12, 0x35b1, 0xb570, 0x359f, 0x3aaf, 0x35d6, 0xb6ca, 0xb65d, 0xb92c, 0xb4f3, 0x388d,
     0x3775, 0x35a4, 0x3347, 0x21d2, 0x3653, 0x395f, 0xaf46, 0x396a, 0xae42, 0xb98e, 0xb902, 0x361a,
     0x353a, 0xb817, 0xb2d2, 0x36ef, 0xae3a, 0xb24d, 0x32fc, 0xb503, 0xb8c4, 0x3c92, 0xbc7f, 0x37af}},
      {"tensor, one BF16 scale", "tensor", -1, DType::BF16, {
     0x3c4a}, {}, {
     0x3f9f, 0xbeca, 0xbf8e, 0x3eb1, 0x3eb1, 0x3faf, 0xbfc7, 0xbf08, 0xbd98, 0xbf50, 0xbd7c, 0xbe63,
     0x3ec4, 0x3e4a, 0xbfbf, 0xbfb1, 0xbf34, 0xbf2a, 0xbfc8, 0xbfaa, 0xbd7c, 0x3e8b, 0x3f88, 0x3fc8,
     0xbdca, 0xbe4a, 0x3f88, 0xbf8e, 0x3f0e, 0x3fba, 0x3f14, 0xbf63, 0xbf6d, 0xbfbd, 0xbf3a, 0x3f9e,
     0x3fc5, 0x3f96, 0x3f44, 0x3d7c, 0x3f53, 0x3fba, 0xbeaa, 0x3fbc, 0xbe63, 0xbf79, 0xbf63, 0x3ec4,
     0x3ef6, 0xbf79, 0xbeea, 0x3f2a, 0xbee3, 0xbf76, 0x3f99, 0xbfc8, 0xbf44, 0x3fbc, 0xbfb9, 0x3f1e}},
  };
  return all;
}

std::unique_ptr<WeightSource> naive_source(const NaiveCase& c, const std::vector<int8_t>& q) {
  const uint64_t groups = c.scale.size() == 1 ? 0 : c.scale.size() / 5;
  std::vector<MemoryTensor> t{{"l.weight", DType::I8, {5, q.size() / 5}, {}, q.data(), nullptr},
                              {"l.weight_scale", c.scale_dtype, groups ? Shape{5, groups} : Shape{1}, {}, c.scale.data(), nullptr}};
  if (!c.zero_point.empty()) t.push_back({"l.weight_zero_point", DType::I8, {5, groups}, {}, c.zero_point.data(), nullptr});
  return WeightSource::from_memory("<memory>", t);
}

QuantConfig naive_config(const NaiveCase& c) {
  QuantConfig q;
  q.method = Method::CompressedTensors, q.ct_format = "int-quantized", q.ct_strategy = c.strategy, q.bits = 8;
  q.group_size = c.group_size, q.sym = c.zero_point.empty(), q.origin = "config.json";
  return q;
}

TEST(NaiveQuantized, DecodesAsCompressedTensorsDequantizes) {
  for (const NaiveCase& c : naive_cases()) {
    SCOPED_TRACE(c.what);
    auto view = dense_view(naive_source(c, kNaiveQ), naive_config(c), true);
    ASSERT_EQ(view->tensors().size(), 1u);
    const TensorView got = view->load(view->at("l.weight"), c.scale_dtype);
    const auto* bits = reinterpret_cast<const uint16_t*>(got.raw());
    EXPECT_EQ(std::vector<uint16_t>(bits, bits + got.numel()), c.dense);
  }
}

TEST(NaiveQuantized, InconsistentLayersNameTheTensorAndTheRule) {
  const std::vector<int8_t> q11(kNaiveQ.begin(), kNaiveQ.begin() + 55);  // 11 columns: groups of 4 do not cover them
  struct Hostile {
    const char* what;
    const NaiveCase& c;
    const std::vector<int8_t>& q;
    bool sym;
    const char* tensor;
  };
  const Hostile hostile[] = {{"groups that do not cover the row", naive_cases()[1], q11, false, "l.weight_scale"},
                             {"asymmetric without zero points", naive_cases()[0], kNaiveQ, false, "l.weight"}};
  for (const Hostile& h : hostile) {
    SCOPED_TRACE(h.what);
    QuantConfig config = naive_config(h.c);
    config.sym = h.sym;
    const std::string msg = test::expect_error(ErrorCode::QuantTensorsInconsistent, [&] {
      auto view = dense_view(naive_source(h.c, h.q), config, true);
      view->load(view->at("l.weight"), DType::F32);
    });
    EXPECT_NE(msg.find(h.tensor), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace wl::quant
