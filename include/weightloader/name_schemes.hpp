// The naming module (src/naming/): the naming schemes of Llama-family checkpoints and models
// (Hugging Face, Meta, torchtune, GGUF, vLLM's fused parameters), recognised from the names alone,
// the translation between them through one canonical scheme (Hugging Face's names), and the rotary
// row orders that go with them. Loaders, the converter and the formats that store Llama layouts
// (llama2.c) all name and reorder through it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/error.hpp"
#include "weightloader/export.hpp"

namespace wl {

// A scheme's name: "hf", "meta", "torchtune", "gguf" ("vllm" is hf with fused parameters on the model side).
WL_API const std::vector<std::string>& name_scheme_names();

// Wrapper prefixes a checkpoint may carry around a scheme's names, in any combination:
// DataParallel's `module.`, torch.compile's `_orig_mod.`, `model.`, `transformer.`, and a multimodal
// model's `language_model.`.
WL_API const std::vector<std::string>& wrapper_prefixes();

// A name in a scheme, seen through the canonical scheme.
struct CanonicalName {
  std::string name;      // the Hugging Face name, e.g. model.layers.0.self_attn.q_proj.weight
  bool rotary = false;   // a q or k projection, whose rows follow the scheme's rotary layout
  bool kv = false;       // the k projection (heads: n_kv_heads)
};

// `architecture` is a GGUF's general.architecture: the "gguf" scheme names each of llama.cpp's
// architectures as its converter does, as the families describe them (src/families/: "llama" —
// Llama, Mistral, Mixtral —, "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma", "gemma2", "gemma3",
// "phi3", ..., "gpt-oss", "llama4"; any other has no names there). The other schemes ignore it.

// `name` (without its wrapper prefix) in `scheme`, as a canonical name; nullopt if the scheme has no such name.
WL_API std::optional<CanonicalName> to_canonical(std::string_view scheme, std::string_view name,
                                                 std::string_view architecture = "llama");
// The canonical `name` in `scheme`; nullopt if the scheme has no such name.
WL_API std::optional<std::string> from_canonical(std::string_view scheme, std::string_view canonical,
                                                 std::string_view architecture = "llama");
// Whether the scheme stores q/k rows in Meta's interleaved rotary layout (meta, torchtune, and
// gguf for llama; llama.cpp runs the other GGUF architectures on Hugging Face's rotary halves).
WL_API bool interleaved_rotary(std::string_view scheme, std::string_view architecture = "llama");
// The scheme stores the canonical tensor's values as this offset + w: 1 for the norms (q/k norms
// included) of a GGUF gemma, gemma2 or gemma3 (llama.cpp's converter adds the 1 that transformers
// adds when it runs); else 0.
WL_API float norm_offset(std::string_view scheme, std::string_view canonical, std::string_view architecture = "llama");

// A canonical tensor that a scheme keeps as one slot of a stack along dim 0: a GGUF llama's
// blk.N.ffn_gate_exps.weight holds model.layers.N.block_sparse_moe.experts.E.w1.weight in slot E
// (ffn_up_exps: w3, ffn_down_exps: w2); a GGUF gpt-oss stacks the biases too (ffn_gate_exps.bias).
// from_canonical names a whole stack too (model.layers.N.block_sparse_moe.experts.w1.weight is
// blk.N.ffn_gate_exps.weight: a split's part); to_canonical does not (a stack is read per slot).
struct StackSlot {
  std::string stack;  // the stack's stored name
  uint64_t slot = 0;
};
// The stack and slot of a canonical name; nullopt when the scheme stores it on its own.
WL_API std::optional<StackSlot> stack_slot(std::string_view scheme, std::string_view canonical,
                                           std::string_view architecture = "llama");
// How a canonical tensor is stored as parts, each a canonical tensor of its own (named by the scheme
// as any other): n parts split along dim 0 or the last dim, part p the p-th block or every n-th row
// (column) from p, and each part's last two dims swapped where `transposed`.
struct StoredParts {
  std::vector<std::string> names;  // the parts in order; empty: stored whole
  bool columns = false;
  bool interleaved = false;
  bool transposed = false;
};
// Where the scheme's architecture splits `canonical`: GGUF's granitemoe stores
// shared_mlp.input_linear as the shared MLP's gate_proj rows, then up_proj rows; gpt-oss
// mlp.experts.gate_up_proj [experts, hidden, 2 x units] as the stacks mlp.experts.gate_proj.weight
// and up_proj.weight (the interleaved columns, transposed), mlp.experts.down_proj transposed.
WL_API StoredParts stored_parts(std::string_view scheme, std::string_view canonical, std::string_view architecture = "llama");
// The canonical name of slot `slot` of the stored stack `stack`; nullopt if `stack` is not one.
WL_API std::optional<std::string> stacked_canonical(std::string_view scheme, std::string_view stack, uint64_t slot,
                                                    std::string_view architecture = "llama");

// transformers 5 keeps a mixture-of-experts layer's experts stacked: mlp.experts.gate_up_proj
// [experts, 2 * ff, hidden] (each expert's gate rows, then its up rows) and mlp.experts.down_proj
// [experts, hidden, ff]; Mixtral's router is then mlp.gate. The per-expert names the family's earlier
// checkpoints use for slot `expert` of a stored stack (Mixtral: block_sparse_moe.experts.E.w1 / w3 /
// w2; Qwen2-MoE: mlp.experts.E.gate_proj / up_proj / down_proj), each with the part of the slot's
// rows it holds; empty when `stored` is not such a stack of a `model_type` with experts. Granite-MoE's
// checkpoints stack theirs as block_sparse_moe.input_linear / output_linear (router.layer its
// router), presented under Mixtral's names.
struct ExpertStackPart {
  std::string name;
  uint64_t part = 0, parts = 1;  // rows [part, part + 1) * rows / parts of the slot
};
WL_API std::vector<ExpertStackPart> unstacked_experts(std::string_view model_type, std::string_view stored, uint64_t expert);
// The earlier name of a transformers 5 router (Mixtral's mlp.gate.weight); nullopt when unchanged.
WL_API std::optional<std::string> unstacked_router(std::string_view model_type, std::string_view stored);

// vLLM's FusedMoE holds a layer's experts stacked as parameters: <module>.experts.w13_weight
// [experts, 2 * ff, hidden] (each expert's gate rows, then its up rows) and <module>.experts.w2_weight
// [experts, hidden, ff]; transformers 5's modules the same as experts.gate_up_proj / down_proj. The
// checkpoint tensors that fill expert `expert` of such a parameter, in row order, under each
// per-expert naming in use (Mixtral's w1/w3/w2, also under block_sparse_moe for a module's mlp;
// Qwen2-MoE's gate_proj/up_proj/down_proj); empty when `param` is not one.
WL_API std::vector<std::vector<std::string>> fused_moe_parts(std::string_view param, uint64_t expert);
// Where a checkpoint of the earlier layout keeps a transformers 5 router <module>.mlp.gate.weight
// (Mixtral's <module>.block_sparse_moe.gate.weight); nullopt for other names.
WL_API std::optional<std::string> earlier_router_name(std::string_view param);

// The two rotary layouts of a q/k projection of `rows` = heads * d rows: Meta's interleaved one
// (Meta, GGUF, llama2.c, torchtune) and Hugging Face's, each head's two rotary halves in turn.
enum class RotaryOrder {
  InterleavedAsHf,  // reads an interleaved tensor in Hugging Face's layout
  HfAsInterleaved,  // reads (or writes) a Hugging Face tensor in the interleaved layout
};

// Where a head count came from, to name it when it does not split a projection's rows: the code
// of the checkpoint's own format (GgufHeadCount, ConfigInvalid, Llama2cInconsistentHeads), the
// field holding the count ("llama.attention.head_count_kv", "params.json field 'n_heads'") and
// the file the error names.
struct HeadCountOrigin {
  ErrorCode code;
  std::string field;
  std::string file;
};

// The order that reads a projection in the other layout: order[i] is the stored row that becomes
// row i (TensorInfo::row_order; GgufWriteEntry::row_order). The one implementation of the
// permutation. Throws origin.code, naming origin.file, origin.field and `tensor`, unless
// heads > 0 and rows is a multiple of 2 * heads.
WL_API std::vector<uint64_t> rotary_row_order(uint64_t rows, uint64_t heads, RotaryOrder order,
                                              const HeadCountOrigin& origin, const std::string& tensor);
// Whether `name` (without its wrapper prefix) is a tensor the scheme carries that no model takes
// (Meta's rope.freqs, Hugging Face's rotary_emb.inv_freq).
WL_API bool scheme_drops(std::string_view scheme, std::string_view name);
// vLLM's fused parameters: a canonical layer stem (self_attn.qkv_proj) -> its parts' stems, in the
// order they are stacked along dim 0.
WL_API const std::map<std::string, std::vector<std::string>, std::less<>>& vllm_fused_stems();
// The parts of a fused (vLLM) canonical name, in the order they are stacked along dim 0
// (qkv_proj: q, k, v; gate_up_proj: gate, up); empty if the name is not fused.
WL_API std::vector<std::string> fused_parts(std::string_view canonical);

// The scheme and wrapper prefix that explain the most of `names`.
struct DetectedScheme {
  std::string scheme;   // empty: no scheme explains any name
  std::string prefix;   // wrapper prefix, e.g. "module." or ""
  size_t matched = 0;   // names the scheme explains
  size_t total = 0;
  std::string to_string() const;  // "hf", "meta (prefix _orig_mod.), 20 of 21 names", "unknown"
};

// All schemes with their best prefix and score, best first (ties keep the order of name_scheme_names()).
WL_API std::vector<DetectedScheme> rank_name_schemes(const std::vector<std::string>& names);
// The best of rank_name_schemes (scheme empty when none explains a name).
WL_API DetectedScheme detect_name_scheme(const std::vector<std::string>& names);

}  // namespace wl
