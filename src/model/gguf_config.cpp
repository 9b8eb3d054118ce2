// GGUF keys into the model description, per architecture as llama.cpp's llama-model.cpp reads them
// (at c392e509): {arch}.embedding_length, .block_count, .attention.key_length, ... with its defaults.
#include "model/gguf_config.hpp"

#include <string_view>

#include "families/family.hpp"
#include "model/config_fields.hpp"

namespace wl {

namespace {

// llama.cpp's architectures that some family is written as, in the order the families are listed.
std::string gguf_architecture_names() {
  std::vector<std::string_view> names;
  for (const Family* f : families())
    if (!f->gguf.name.empty() && std::find(names.begin(), names.end(), f->gguf.name) == names.end()) names.push_back(f->gguf.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// Experts as llama.cpp's converter writes them: expert_count, expert_used_count and each expert's
// width (expert_feed_forward_length; llama-model.cpp's default when absent).
void read_experts(const MetadataFields& m, const std::string& a, LlamaConfig& c, uint64_t default_width) {
  c.moe.num_experts = m.uint(a + "expert_count");
  c.moe.experts_per_token = m.uint(a + "expert_used_count");
  c.moe.expert_intermediate_size = m.uint(a + "expert_feed_forward_length", default_width);
}

// What the architecture itself fixes (biases are the tensors there are, as llama.cpp loads them):
// Gemma's (1 + w) norms, scaled embeddings and GELU (tanh), Gemma 2's four norms, soft-caps and
// windows on even layers, Gemma 3's five sliding layers to one global with their own rope base,
// Phi-3's window on every layer, the experts of llama (Mixtral), qwen2moe and qwen3moe, OLMo 2's
// post-norms and whole-projection q/k norms, Granite's multipliers.
void read_family(const MetadataFields& m, const std::string& a, const Family& family, LlamaConfig& c) {
  const std::string& type = c.architecture;
  c.qk_norm = family.qk_norm;
  c.qk_norm_whole = family.qk_norm_whole;
  c.post_norms_only = family.post_norms_only;
  if (family.multipliers) {  // llama-model.cpp requires all four
    c.embedding_multiplier = m.number(a + "embedding_scale");
    c.attention_multiplier = m.number(a + "attention.scale");
    c.residual_multiplier = m.number(a + "residual_scale");
    c.logits_scaling = m.number(a + "logit_scale");
  }
  if (family.gemma_norms) {
    c.hidden_act = "gelu_pytorch_tanh";
    c.norm_weight_offset = c.scale_embeddings = true;
  }
  if (family.gemma2) {
    c.sandwich_norms = true;
    // llama.cpp scales queries by 1/sqrt(head_dim), and the 27B models' (46 layers in Gemma 2, 62 in
    // Gemma 3) by 1/sqrt(hidden/heads): what query_pre_attn_scalar says for the released models.
    const uint64_t big = type == "gemma2" ? 46 : 62;
    c.query_pre_attn_scalar = double(c.num_layers == big ? c.hidden_size / c.num_heads : c.head_dim);
  }
  if (type == "gemma2") {
    c.attn_logit_softcapping = m.number(a + "attn_logit_softcapping", 50.0);
    c.final_logit_softcapping = m.number(a + "final_logit_softcapping", 30.0);
    c.sliding_window = m.uint(a + "attention.sliding_window", 4096);
    c.sliding_window_every = 2;
    // Newer llama.cpp turns Gemma 2's sliding layers with their own base when the file gives one:
    // a different one is refused rather than run with the other layers' (the engine reads it from config.json only).
    if (m.has(a + "rope.freq_base_swa") && m.number(a + "rope.freq_base_swa", 0) != c.rope_theta)
      throw config_invalid(m.file(), a + "rope.freq_base_swa", "a sliding-layer rope base other than rope.freq_base is not supported");
  }
  if (type == "gemma3_text") {
    // llama-model.cpp's Gemma 3: every sixth layer global, the others sliding and turning with base 10000.
    c.sliding_window = m.uint(a + "attention.sliding_window");
    for (uint64_t l = 0; l < c.num_layers; ++l) c.sliding_layers.push_back((l + 1) % 6 != 0);
    c.sliding_rope_theta = m.number(a + "rope.freq_base_swa", 10000.0);
  }
  if (type == "phi3") c.sliding_window = m.uint(a + "attention.sliding_window", 0);
  if (type == "llama" && m.uint(a + "expert_count", 0) > 0) {
    c.architecture = "mixtral";  // llama.cpp's llama with experts: softmax, top-k, renormalised
    read_experts(m, a, c, c.intermediate_size);
  }
  if (type == "qwen2_moe") {
    // Every layer sparse, the top-k weights never renormalised, a shared expert behind its sigmoid gate.
    read_experts(m, a, c, m.uint(a + "expert_used_count", 0) ? c.intermediate_size / m.uint(a + "expert_used_count") : 0);
    c.moe.norm_topk_prob = false;
    c.moe.shared_expert_intermediate_size = m.uint(a + "expert_shared_feed_forward_length", c.intermediate_size);
  }
  if (type == "qwen3_moe") read_experts(m, a, c, c.intermediate_size);  // every layer sparse, top-k renormalised
}

}  // namespace

LlamaConfig llama_config_from_gguf(const std::map<std::string, std::string>& metadata, const std::string& file) {
  const MetadataFields m(metadata, file);
  const std::string arch = m.string("general.architecture");
  const Family* family = family_by_gguf_architecture(arch);
  if (!family)
    throw config_invalid(file, "general.architecture",
                         fmt::format("'{}' is not an architecture the engine runs ({})", arch, gguf_architecture_names()));
  const std::string a = arch + ".";
  LlamaConfig c;
  c.origin = "gguf";
  c.architecture = std::string(family->model_type);
  c.hidden_size = m.uint(a + "embedding_length");
  c.intermediate_size = m.uint(a + "feed_forward_length");
  c.num_layers = m.uint(a + "block_count");
  c.num_heads = m.uint(a + "attention.head_count");
  c.num_kv_heads = m.uint(a + "attention.head_count_kv", c.num_heads);
  c.head_dim = m.uint(a + "attention.key_length", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.rotary_dim = m.uint(a + "rope.dimension_count", c.head_dim);
  c.vocab_size = m.uint(a + "vocab_size", 0);
  c.max_position_embeddings = m.uint(a + "context_length", 2048);
  c.rms_norm_eps = m.number(a + "attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = m.number(a + "rope.freq_base", 10000.0);
  if (m.has(a + "rope.scaling.type") && m.string(a + "rope.scaling.type") != "none")
    throw config_invalid(file, a + "rope.scaling.type", "rope scaling is not supported");
  if (m.has("tokenizer.ggml.eos_token_id")) c.eos_token_ids = {int32_t(m.uint("tokenizer.ggml.eos_token_id"))};
  read_family(m, a, *family, c);
  return c;
}

}  // namespace wl
