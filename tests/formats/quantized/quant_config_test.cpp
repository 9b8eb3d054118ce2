// Recognising the method and its settings from a quantization_config block.
#include <gtest/gtest.h>

#include "formats/quantized/quant_config.hpp"
#include "test_util.hpp"

namespace wl::quant {
namespace {

QuantConfig parse(const char* text) { return parse_quant_config(nlohmann::json::parse(text), "config.json"); }

TEST(QuantConfig, GptqSettingsAndZeroConvention) {
  const QuantConfig v1 = parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true, "sym": false})");
  EXPECT_EQ(v1.method, Method::Gptq);
  EXPECT_EQ(v1.bits, 4);
  EXPECT_EQ(v1.group_size, 128);
  EXPECT_TRUE(v1.desc_act);
  EXPECT_FALSE(v1.sym);
  EXPECT_TRUE(v1.zeros_minus_one);  // checkpoint_format absent: AutoGPTQ's v1
  EXPECT_FALSE(parse(R"({"quant_method": "gptq", "bits": 8, "checkpoint_format": "gptq_v2"})").zeros_minus_one);
  // AutoGPTQ's quantize_config.json names no method.
  EXPECT_EQ(parse(R"({"bits": 4, "group_size": -1, "desc_act": false})").method, Method::Gptq);
  EXPECT_NE(v1.describe().find("gptq 4-bit, group 128, asym, desc_act true, zeros v1"), std::string::npos);
}

TEST(QuantConfig, AwqBnbFp8AndCompressedTensors) {
  const QuantConfig awq = parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "GEMM"})");
  EXPECT_EQ(awq.method, Method::Awq);
  EXPECT_EQ(awq.awq_version, "gemm");
  EXPECT_FALSE(awq.sym);
  const QuantConfig nf4 = parse(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
                                    "bnb_4bit_use_double_quant": true, "llm_int8_skip_modules": ["lm_head"]})");
  EXPECT_EQ(nf4.method, Method::Bnb4);
  EXPECT_EQ(nf4.bnb_quant_type, "nf4");
  EXPECT_TRUE(nf4.bnb_double_quant);
  EXPECT_EQ(nf4.ignore, std::vector<std::string>{"lm_head"});
  EXPECT_EQ(parse(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})").method, Method::Bnb8);
  const QuantConfig fp8 = parse(R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})");
  EXPECT_EQ(fp8.fp8_block, (std::vector<int64_t>{128, 128}));
  EXPECT_TRUE(parse(R"({"quant_method": "fp8", "weight_block_size": null})").fp8_block.empty());
  const QuantConfig ct = parse(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128, "symmetric": true}}}, "ignore": ["lm_head"]})");
  EXPECT_EQ(ct.method, Method::CompressedTensors);
  EXPECT_EQ(ct.ct_format, "pack-quantized");
  EXPECT_EQ(ct.ct_strategy, "group");
  EXPECT_EQ(ct.group_size, 128);
  EXPECT_EQ(ct.bits, 4);
  EXPECT_EQ(ct.ignore, std::vector<std::string>{"lm_head"});
}

TEST(QuantConfig, MalformedBlocksNameTheKey) {
  EXPECT_NE(test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "gptq", "bits": 5})"); })
                .find("bits 5"),
            std::string::npos);
  EXPECT_NE(test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "gptq", "group_size": "128"})"); })
                .find("'group_size'"),
            std::string::npos);
  test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "gptq", "group_size": 0})"); });
  test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "awq", "bits": 8})"); });
  test::expect_error(ErrorCode::QuantConfigInvalid,
                     [] { parse(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "load_in_8bit": true})"); });
  test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "fp8", "weight_block_size": [128]})"); });
  test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"quant_method": "compressed-tensors", "format": "x"})"); });
  test::expect_error(ErrorCode::QuantConfigInvalid, [] { parse(R"({"group_size": 128})"); });
  test::expect_error(ErrorCode::QuantUnsupported, [] { parse(R"({"quant_method": "hqq"})"); });
  test::expect_error(ErrorCode::QuantUnsupported, [] { parse(R"({"quant_method": "gptq", "checkpoint_format": "marlin"})"); });
  EXPECT_FALSE(quant_config_of_config_json(R"({"hidden_size": 8})", "config.json").has_value());
}

}  // namespace
}  // namespace wl::quant
