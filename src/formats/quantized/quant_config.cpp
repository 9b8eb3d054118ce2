#include "formats/quantized/quant_config.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& origin, const std::string& what) {
  throw Error(ErrorCode::QuantConfigInvalid, "quantization_config: " + what, origin);
}

int64_t int_key(const json& j, const char* key, int64_t fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number_integer()) invalid(origin, fmt::format("'{}' is {}, not an integer", key, j[key].dump()));
  return j[key].get<int64_t>();
}

bool bool_key(const json& j, const char* key, bool fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) invalid(origin, fmt::format("'{}' is {}, not true or false", key, j[key].dump()));
  return j[key].get<bool>();
}

std::string string_key(const json& j, const char* key, const std::string& fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_string()) invalid(origin, fmt::format("'{}' is {}, not a string", key, j[key].dump()));
  return j[key].get<std::string>();
}

std::vector<std::string> string_list(const json& j, const char* key, const std::string& origin) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) invalid(origin, fmt::format("'{}' is not a list", key));
  for (const json& v : j[key]) {
    if (!v.is_string()) invalid(origin, fmt::format("'{}' holds {}, not a string", key, v.dump()));
    out.push_back(v.get<std::string>());
  }
  return out;
}

void read_gptq_awq(const json& j, QuantConfig& c) {
  c.bits = static_cast<int>(int_key(j, "bits", c.method == Method::Awq ? int_key(j, "w_bit", 4, c.origin) : 4, c.origin));
  c.group_size = int_key(j, "group_size", int_key(j, "q_group_size", -1, c.origin), c.origin);
  if (c.group_size == 0 || c.group_size < -1) invalid(c.origin, fmt::format("group_size {} is neither -1 nor positive", c.group_size));
  if (c.method == Method::Gptq) {
    if (c.bits != 2 && c.bits != 3 && c.bits != 4 && c.bits != 8)
      invalid(c.origin, fmt::format("GPTQ bits {} (GPTQ packs 2, 3, 4 or 8)", c.bits));
    c.desc_act = bool_key(j, "desc_act", false, c.origin);
    c.sym = bool_key(j, "sym", true, c.origin);
    const std::string format = string_key(j, "checkpoint_format", "gptq", c.origin);
    if (format == "gptq_v2") c.zeros_minus_one = false;
    else if (format == "gptq") c.zeros_minus_one = true;
    else throw Error(ErrorCode::QuantUnsupported, fmt::format("GPTQ checkpoint_format '{}' (known: gptq, gptq_v2)", format), c.origin);
  } else {
    if (c.bits != 4) invalid(c.origin, fmt::format("AWQ bits {} (AWQ packs 4)", c.bits));
    c.sym = !bool_key(j, "zero_point", true, c.origin);
    c.awq_version = string_key(j, "version", "gemm", c.origin);
    for (char& ch : c.awq_version) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  c.ignore = string_list(j, "modules_to_not_convert", c.origin);
}

void read_bnb(const json& j, QuantConfig& c) {
  const bool four = bool_key(j, "load_in_4bit", false, c.origin), eight = bool_key(j, "load_in_8bit", false, c.origin);
  if (four == eight) invalid(c.origin, "bitsandbytes needs exactly one of load_in_4bit and load_in_8bit true");
  c.method = four ? Method::Bnb4 : Method::Bnb8;
  c.bits = four ? 4 : 8;
  c.sym = true;
  if (four) {
    c.bnb_quant_type = string_key(j, "bnb_4bit_quant_type", "fp4", c.origin);
    if (c.bnb_quant_type != "nf4" && c.bnb_quant_type != "fp4")
      invalid(c.origin, fmt::format("bnb_4bit_quant_type '{}' (nf4 or fp4)", c.bnb_quant_type));
    c.bnb_double_quant = bool_key(j, "bnb_4bit_use_double_quant", false, c.origin);
  }
  c.ignore = string_list(j, "llm_int8_skip_modules", c.origin);
}

void read_fp8(const json& j, QuantConfig& c) {
  c.bits = 8;
  const std::string fmt_name = string_key(j, "fmt", "e4m3", c.origin);
  if (fmt_name != "e4m3") throw Error(ErrorCode::QuantUnsupported, fmt::format("FP8 fmt '{}' (e4m3 is decoded)", fmt_name), c.origin);
  if (j.contains("weight_block_size") && !j["weight_block_size"].is_null()) {
    const json& b = j["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() || b[0].get<int64_t>() <= 0 ||
        b[1].get<int64_t>() <= 0)
      invalid(c.origin, fmt::format("weight_block_size {} is not two positive integers", b.dump()));
    c.fp8_block = {b[0].get<int64_t>(), b[1].get<int64_t>()};
  }
  // DeepSeek's "ue8m0" (V3.1 on): block scales that are powers of two, which checkpoints may store as
  // safetensors' F8_E8M0; the scale tensor's dtype says how it is read, this only shows in describe().
  c.fp8_scale_fmt = string_key(j, "scale_fmt", "", c.origin);
  c.ignore = string_list(j, "modules_to_not_convert", c.origin);
}

void read_compressed_tensors(const json& j, QuantConfig& c) {
  c.ct_format = string_key(j, "format", "", c.origin);
  c.ignore = string_list(j, "ignore", c.origin);
  if (j.contains("sparsity_config") && j["sparsity_config"].is_object())
    c.ct_sparsity = string_key(j["sparsity_config"], "format", "", c.origin);
  // A sparse model that is not quantized has no config_groups.
  if (!c.ct_sparsity.empty() && (!j.contains("config_groups") || j["config_groups"].empty())) {
    if (c.ct_format.empty()) c.ct_format = "dense";
    return;
  }
  if (!j.contains("config_groups") || !j["config_groups"].is_object() || j["config_groups"].empty())
    invalid(c.origin, "compressed-tensors without config_groups");
  // One scheme for every target: the groups of real checkpoints agree on the weights' scheme.
  for (const auto& [name, group] : j["config_groups"].items()) {
    if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object())
      invalid(c.origin, fmt::format("config_groups.{} has no 'weights' scheme", name));
    const json& w = group["weights"];
    const int bits = static_cast<int>(int_key(w, "num_bits", 8, c.origin));
    const std::string type = string_key(w, "type", "int", c.origin), strategy = string_key(w, "strategy", "tensor", c.origin);
    const std::string format = string_key(group, "format", c.ct_format, c.origin);
    if (c.bits && (bits != c.bits || strategy != c.ct_strategy || format != c.ct_format))
      throw Error(ErrorCode::QuantUnsupported, fmt::format("config_groups.{} uses another scheme than the first group", name), c.origin);
    c.bits = bits, c.ct_strategy = strategy, c.ct_format = format;
    c.sym = bool_key(w, "symmetric", true, c.origin);
    c.group_size = int_key(w, "group_size", -1, c.origin);
    if (type == "float" && bits != 8 && bits != 4) invalid(c.origin, fmt::format("config_groups.{}: float weights of {} bits", name, bits));
    if (w.contains("block_structure") && w["block_structure"].is_array() && w["block_structure"].size() == 2)
      c.fp8_block = {w["block_structure"][0].get<int64_t>(), w["block_structure"][1].get<int64_t>()};
  }
  if (c.ct_format.empty()) invalid(c.origin, "compressed-tensors without a 'format'");
}

// NVIDIA ModelOpt: config.json's block (quant_method "modelopt", quant_algo, the weights' group_size
// under config_groups, ignore) or hf_quant_config.json's (quantization: quant_algo, group_size,
// exclude_modules), as vLLM's ModelOpt configs read both.
void read_modelopt(const json& j, QuantConfig& c) {
  const json& q = j.contains("quantization") && j["quantization"].is_object() ? j["quantization"] : j;
  c.modelopt_algo = string_key(q, "quant_algo", "", c.origin);
  if (c.modelopt_algo != "NVFP4" && c.modelopt_algo != "FP8")
    throw Error(ErrorCode::QuantUnsupported, fmt::format("ModelOpt quant_algo '{}' (NVFP4 and FP8 are decoded)", c.modelopt_algo), c.origin);
  c.bits = c.modelopt_algo == "FP8" ? 8 : 4;
  int64_t group = int_key(q, "group_size", -1, c.origin);
  if (group < 0 && q.contains("config_groups") && q["config_groups"].is_object())
    for (const auto& [name, g] : q["config_groups"].items())
      if (g.is_object() && g.contains("weights") && g["weights"].is_object()) group = int_key(g["weights"], "group_size", -1, c.origin);
  c.group_size = c.modelopt_algo == "NVFP4" ? (group < 0 ? 16 : group) : -1;
  if (c.group_size == 0) invalid(c.origin, "ModelOpt group_size 0");
  c.ignore = string_list(q, q.contains("exclude_modules") ? "exclude_modules" : "ignore", c.origin);
}

}  // namespace

bool QuantConfig::stored_dense() const {
  return method == Method::CompressedTensors && ct_format == "dense" && (ct_sparsity.empty() || ct_sparsity == "dense");
}

std::string QuantConfig::method_name() const {
  switch (method) {
    case Method::Gptq: return "gptq";
    case Method::Awq: return "awq";
    case Method::Bnb4: return "bitsandbytes-" + bnb_quant_type;
    case Method::Bnb8: return "bitsandbytes-int8";
    case Method::Fp8: return "fp8";
    case Method::CompressedTensors: return "compressed-tensors";
    case Method::Mxfp4: return "mxfp4";
    case Method::Modelopt: return "modelopt-" + modelopt_algo;
  }
  return "?";
}

std::string QuantConfig::describe() const {
  const std::string group = group_size < 0 ? "per layer" : fmt::format("{}", group_size);
  switch (method) {
    case Method::Gptq:
      return fmt::format("gptq {}-bit, group {}, {}, desc_act {}, zeros {}", bits, group, sym ? "sym" : "asym", desc_act,
                         zeros_minus_one ? "v1 (stored zero - 1)" : "v2");
    case Method::Awq: return fmt::format("awq {} {}-bit, group {}, {}", awq_version, bits, group, sym ? "sym" : "zero point");
    case Method::Bnb4:
      return fmt::format("bitsandbytes {} 4-bit, blocks of {}{}", bnb_quant_type, bnb_block_size,
                         bnb_double_quant ? ", double quant (nested absmax)" : "");
    case Method::Bnb8: return "bitsandbytes LLM.int8 8-bit, per-row SCB";
    case Method::Fp8:
      return (fp8_block.empty() ? std::string("fp8 e4m3, per-tensor scale_inv")
                                : fmt::format("fp8 e4m3, {}x{} block scale_inv", fp8_block[0], fp8_block[1])) +
             (fp8_scale_fmt.empty() ? "" : fmt::format(" ({})", fp8_scale_fmt));
    case Method::CompressedTensors:
      return fmt::format("compressed-tensors {}{}{}{}", bits ? fmt::format("{}, {}-bit, {} scale", ct_format, bits, ct_strategy) : ct_format,
                         group_size > 0 ? fmt::format(", group {}", group_size) : "",
                         ct_sparsity.empty() ? "" : fmt::format(", {} sparsity", ct_sparsity),
                         ignore.empty() ? "" : fmt::format(", ignore {}", fmt::join(ignore, ",")));
    case Method::Mxfp4: return "mxfp4 (E2M1 values, an E8M0 scale per block of 32)";
    case Method::Modelopt:
      return modelopt_algo == "NVFP4"
                 ? fmt::format("modelopt NVFP4 (E2M1 values, an FP8 scale per group of {} times weight_scale_2)", group_size)
                 : "modelopt FP8 (e4m3, per-tensor weight_scale)";
  }
  return "?";
}

QuantConfig parse_quant_config(const json& block, const std::string& origin) {
  if (!block.is_object()) invalid(origin, "not a JSON object");
  QuantConfig c;
  c.origin = origin;
  c.block_json = block.dump();
  // AutoGPTQ's quantize_config.json names no method; it has bits and group_size. ModelOpt's
  // hf_quant_config.json names none either; its producer is modelopt.
  const bool modelopt_file = block.contains("producer") && block["producer"].is_object() &&
                             string_key(block["producer"], "name", "", origin) == "modelopt";
  const std::string method = string_key(block, "quant_method", block.contains("bits") ? "gptq" : modelopt_file ? "modelopt" : "", origin);
  if (method == "gptq") c.method = Method::Gptq, read_gptq_awq(block, c);
  else if (method == "awq") c.method = Method::Awq, read_gptq_awq(block, c);
  else if (method == "bitsandbytes") read_bnb(block, c);
  else if (method == "fp8") c.method = Method::Fp8, read_fp8(block, c);
  else if (method == "compressed-tensors") c.method = Method::CompressedTensors, read_compressed_tensors(block, c);
  else if (method == "mxfp4") c.method = Method::Mxfp4, c.bits = 4, c.ignore = string_list(block, "modules_to_not_convert", origin);
  else if (method == "modelopt") c.method = Method::Modelopt, read_modelopt(block, c);
  else if (method.empty()) invalid(origin, "no quant_method");
  else
    throw Error(ErrorCode::QuantUnsupported,
                fmt::format("quant_method '{}' (known: gptq, awq, bitsandbytes, fp8, compressed-tensors, mxfp4, modelopt)", method), origin);
  return c;
}

std::optional<QuantConfig> quant_config_of_config_json(const std::string& config_json, const std::string& origin) {
  const json j = json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("quantization_config")) return std::nullopt;
  return parse_quant_config(j["quantization_config"], origin);
}

}  // namespace wl::quant
