// GGUF keys into the model description, per architecture as llama.cpp's llama-model.cpp reads them
// (at c392e509): {arch}.embedding_length, .block_count, .attention.key_length, ... with its defaults.
#include "model/gguf_config.hpp"

#include <array>
#include <string_view>

#include "model/config_fields.hpp"

namespace wl {

namespace {

constexpr std::array<std::string_view, 6> kArchitectures{"llama", "qwen2", "qwen2moe", "gemma", "gemma2", "phi3"};

// What the architecture itself fixes (biases are the tensors there are, as llama.cpp loads them):
// Gemma's (1 + w) norms, scaled embeddings and GELU (tanh),
// Gemma 2's four norms, soft-caps and windows on even layers, Phi-3's window on every layer.
void read_family(const MetadataFields& m, const std::string& a, LlamaConfig& c) {
  const std::string& arch = c.architecture;
  if (arch == "gemma" || arch == "gemma2") {
    c.hidden_act = "gelu_pytorch_tanh";
    c.norm_weight_offset = c.scale_embeddings = true;
  }
  if (arch == "gemma2") {
    c.sandwich_norms = true;
    c.attn_logit_softcapping = m.number(a + "attn_logit_softcapping", 50.0);
    c.final_logit_softcapping = m.number(a + "final_logit_softcapping", 30.0);
    c.sliding_window = m.uint(a + "attention.sliding_window", 4096);
    c.sliding_window_every = 2;
    // llama.cpp scales queries by 1/sqrt(head_dim), and Gemma 2 27B's (46 layers) by
    // 1/sqrt(hidden/heads): what the model's query_pre_attn_scalar says for the released models.
    c.query_pre_attn_scalar = double(c.num_layers == 46 ? c.hidden_size / c.num_heads : c.head_dim);
    // Newer llama.cpp turns Gemma 2's sliding layers with their own base when the file gives one:
    // a different one is refused rather than run with the other layers' (the engine reads it from config.json only).
    if (m.has(a + "rope.freq_base_swa") && m.number(a + "rope.freq_base_swa", 0) != c.rope_theta)
      throw config_invalid(m.file(), a + "rope.freq_base_swa", "a sliding-layer rope base other than rope.freq_base is not supported");
  }
  if (arch == "phi3") c.sliding_window = m.uint(a + "attention.sliding_window", 0);
  if (arch == "llama" && m.uint(a + "expert_count", 0) > 0) {
    c.architecture = "mixtral";  // llama.cpp's llama with experts: softmax, top-k, renormalised
    c.moe.num_experts = m.uint(a + "expert_count");
    c.moe.experts_per_token = m.uint(a + "expert_used_count");
    c.moe.expert_intermediate_size = c.intermediate_size;
  }
  if (arch == "qwen2moe") {
    // llama.cpp's qwen2moe: every layer sparse, the top-k weights never renormalised, a shared
    // expert behind its sigmoid gate (sizes defaulting as llama-model.cpp does).
    c.architecture = "qwen2_moe";
    c.moe.num_experts = m.uint(a + "expert_count");
    c.moe.experts_per_token = m.uint(a + "expert_used_count");
    c.moe.norm_topk_prob = false;
    c.moe.expert_intermediate_size =
        m.uint(a + "expert_feed_forward_length", c.moe.experts_per_token ? c.intermediate_size / c.moe.experts_per_token : 0);
    c.moe.shared_expert_intermediate_size = m.uint(a + "expert_shared_feed_forward_length", c.intermediate_size);
  }
}

}  // namespace

LlamaConfig llama_config_from_gguf(const std::map<std::string, std::string>& metadata, const std::string& file) {
  const MetadataFields m(metadata, file);
  const std::string arch = m.string("general.architecture");
  bool known = false;
  for (std::string_view k : kArchitectures) known = known || k == arch;
  if (!known)
    throw config_invalid(file, "general.architecture",
                         fmt::format("'{}' is not an architecture the engine runs (llama, qwen2, qwen2moe, gemma, gemma2, phi3)", arch));
  const std::string a = arch + ".";
  LlamaConfig c;
  c.origin = "gguf";
  c.architecture = arch;
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
  read_family(m, a, c);
  return c;
}

}  // namespace wl
