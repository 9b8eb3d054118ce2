"""Every family checked against transformers 5 itself over configs the other tests do not use:
head_dim apart from hidden / heads, one kv head and as many as heads, odd widths and vocabularies,
the head tied and untied against the family's default, every rope type transformers 5 runs for the
family (and rope_theta), partial rotary where the family reads it, windows and chunks shorter than
the sequence, each family's own knobs (routing, soft-caps, multipliers, norms, biases), and
config.json as transformers 4 wrote it. Each case is a tiny random model of its own seed, built and
saved by the pinned transformers; the engine's logits equal transformers' at every position of a
short sequence and of one longer than every window (40 tokens). What the engine cannot run is
refused by name."""
import copy
import json
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import PLAIN, TOLERANCE, build, engine_logits, error, reference, refused_after  # noqa: E402

T = transformers
LONG = 40  # longer than every window and chunk below
MOE = dict(num_local_experts=4, num_experts_per_tok=2)
MULTIPLIERS = dict(embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=4.0)
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
           num_hidden_layers=3, moe_intermediate_size=16, n_routed_experts=8, first_k_dense_replace=1)
GEMMA3_ROPE = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
GLM_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
FAST = {"rope_type": "default", "rope_theta": 100.0}

# Each family: its transformers config class, rotary settings, and the sizes every variation starts from.
FAMILIES = {
    "llama": (T.LlamaConfig, PLAIN, {}),
    "mistral": (T.MistralConfig, PLAIN, {}),
    "mixtral": (T.MixtralConfig, PLAIN, dict(MOE, head_dim=8)),  # transformers' scaled rope needs head_dim given
    "qwen2": (T.Qwen2Config, PLAIN, {}),
    "qwen2_moe": (T.Qwen2MoeConfig, PLAIN, dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                                 shared_expert_intermediate_size=24)),
    "gemma": (T.GemmaConfig, PLAIN, dict(head_dim=8)),
    "gemma2": (T.Gemma2Config, PLAIN, dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=6)),
    "gemma3_text": (T.Gemma3TextConfig, GEMMA3_ROPE, dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=6, num_hidden_layers=3,
                                                          layer_types=["sliding_attention", "full_attention", "sliding_attention"])),
    "phi3": (T.Phi3Config, PLAIN, {}),
    "qwen3": (T.Qwen3Config, PLAIN, dict(head_dim=8)),
    "qwen3_moe": (T.Qwen3MoeConfig, PLAIN, dict(MOE, head_dim=8, moe_intermediate_size=16)),
    "deepseek_v2": (T.DeepseekV2Config, PLAIN, dict(MLA, q_lora_rank=None, num_experts_per_tok=3, n_shared_experts=1)),
    "deepseek_v3": (T.DeepseekV3Config, PLAIN, dict(MLA, n_group=4, topk_group=2, num_experts_per_tok=2, n_shared_experts=2)),
    "gpt_oss": (T.GptOssConfig, PLAIN, dict(MOE, head_dim=8, intermediate_size=32, sliding_window=6, swiglu_limit=1.0)),
    "olmo2": (T.Olmo2Config, PLAIN, {}),
    "smollm3": (T.SmolLM3Config, PLAIN, dict(num_hidden_layers=4, no_rope_layer_interval=2)),
    "granite": (T.GraniteConfig, PLAIN, MULTIPLIERS),
    "granitemoe": (T.GraniteMoeConfig, PLAIN, dict(MOE, **MULTIPLIERS)),
    "granitemoeshared": (T.GraniteMoeSharedConfig, PLAIN, dict(MOE, **MULTIPLIERS, shared_intermediate_size=24)),
    "glm4": (T.Glm4Config, GLM_ROPE, dict(head_dim=16)),
    "llama4_text": (T.Llama4TextConfig, FAST, dict(num_hidden_layers=4, intermediate_size=16, intermediate_size_mlp=24, head_dim=8,
                                                  num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2,
                                                  no_rope_layer_interval=3, attention_chunk_size=8, floor_scale=4, attn_scale=0.5)),
}
LATENT = ("deepseek_v2", "deepseek_v3")  # head_dim is qk_rope_head_dim; kv heads as many as heads
GEMMAS = ("gemma", "gemma2", "gemma3_text")
NONE_MEANS = ("sliding_window", "q_lora_rank", "attn_logit_softcapping", "final_logit_softcapping")  # none, q_proj, no cap


def rope_with(family, scaling, every_type=False):
    """The family's rotary settings with `scaling` added (Gemma 3: to the global layers', or with
    `every_type` to both layer types')."""
    base = FAMILIES[family][1]
    if "full_attention" in base:
        return {kind: {**rope, **scaling} if every_type or kind == "full_attention" else rope for kind, rope in base.items()}
    return {**base, **scaling}


def factors(family):
    """Longrope's factor lists: one per rotary frequency."""
    _, rope, s = FAMILIES[family]
    head_dim = s.get("qk_rope_head_dim") or s.get("head_dim") or s.get("hidden_size", 32) // s.get("num_attention_heads", 4)
    pairs = (int(head_dim * rope.get("partial_rotary_factor", 1.0)) + 1) // 2
    return dict(short_factor=[1.0 + 0.5 * j for j in range(pairs)], long_factor=[2.0 + 3.0 * j for j in range(pairs)])


def rope_variations(family):
    """Rope types transformers 5 runs for the family, and other thetas."""
    ropes = {
        "theta 500": rope_with(family, {"rope_theta": 500.0}),
        "yarn": rope_with(family, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}),
        "linear": rope_with(family, {"rope_type": "linear", "factor": 2.0}),
        # every layer type: max_position_embeddings 16 bounds the context of a layer type that does not scale
        "dynamic": rope_with(family, {"rope_type": "dynamic", "factor": 4.0}, every_type=True),
        "yarn untruncated": rope_with(family, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                               "truncate": False, "beta_fast": 8.0, "beta_slow": 2.0}),
        "yarn mscale": rope_with(family, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8,
                                          "mscale": 1.0, "mscale_all_dim": 0.5}),
        "yarn attention_factor": rope_with(family, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32,
                                                    "attention_factor": 1.25}),
        "llama3": rope_with(family, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 16}),
        "longrope": rope_with(family, {"rope_type": "longrope", "original_max_position_embeddings": 16, **factors(family)}),
        "theta 1e6": rope_with(family, {"rope_theta": 1e6}),
    }
    if family == "phi3":  # transformers' Phi-3 runs default and longrope only (it reads yarn as longrope)
        names = ["theta 500", "longrope", "theta 1e6"]
    elif family in LATENT:  # transformers' DeepSeek rotary needs a factor longrope does not give
        names = [n for n in ropes if n != "longrope"]
    else:
        names = list(ropes)
    out = []
    for name in names:
        sizes = dict(max_position_embeddings=16) if name == "dynamic" else {}
        if name == "longrope" and family == "phi3":  # Phi-3 keeps the pretrained context at the top level
            sizes["original_max_position_embeddings"] = 16
        out.append(case(family, name, rope=ropes[name], **sizes))
    return out


def case(family, name, rope=None, tp=1, t4=False, **sizes):
    """One model: the family's sizes with `sizes`, `rope` (else the family's), run on `tp` ranks;
    `t4`: its config.json rewritten as transformers 4 wrote it, the scaling's type under that key."""
    seed = zlib.crc32(f"{family}/{name}".encode())  # each model its own
    return pytest.param(family, rope, sizes, tp, t4, seed, id=f"{family}-{name}")


# hidden 40 over 5 heads (head_dim 8) and a vocabulary of 101; 72 over 6 (12) and 131; 96 over 3 (32) and 37.
WIDTHS = ((40, 5, 101, 56), (72, 6, 131, 40), (96, 3, 37, 24))


def shapes(family):
    """The head tied as the family does not by default, head_dim apart from hidden / heads with one kv
    head (on two ranks too), and odd widths (with as many kv heads as heads, or one)."""
    cls, _, base = FAMILIES[family]
    latent = family in LATENT
    tied = cls().tie_word_embeddings
    out = [case(family, "untied" if tied else "tied", tie_word_embeddings=not tied)]
    if not latent:
        out.append(case(family, "head_dim 24, one kv head", head_dim=24, num_key_value_heads=1))
        out.append(case(family, "head_dim 24, one kv head tp2", head_dim=24, num_key_value_heads=1, tp=2))
    i = list(FAMILIES).index(family)
    for k, (hidden, heads, vocab, ff) in enumerate(WIDTHS[i % 3:] + WIDTHS[:i % 3]):
        kv = heads if k % 2 == 0 or latent else 1
        sizes = dict(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv, vocab_size=vocab, intermediate_size=ff)
        if "head_dim" in base:
            sizes["head_dim"] = hidden // heads
        if "query_pre_attn_scalar" in base:
            sizes["query_pre_attn_scalar"] = hidden // heads
        out.append(case(family, f"hidden {hidden} vocab {vocab} kv {kv}", **sizes))
    return out


# What each family has of its own.
OWN = [
    case("llama", "attention_bias", attention_bias=True),
    case("llama", "hidden_act gelu", hidden_act="gelu"),
    case("llama", "hidden_act swish", hidden_act="swish"),  # transformers' name for SiLU too
    case("llama", "mlp_bias", mlp_bias=True, tp=2),
    case("llama", "partial_rotary_factor ignored", rope={**PLAIN, "partial_rotary_factor": 0.5}),  # transformers turns whole heads
    case("llama", "yarn tp2", rope={**PLAIN, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}, tp=2),
    case("mistral", "sliding_window 8", sliding_window=8),
    case("mistral", "biases ignored", attention_bias=True, mlp_bias=True),  # transformers' Mistral has none
    case("mistral", "no sliding_window", sliding_window=None),
    case("mixtral", "top-1", num_experts_per_tok=1),
    case("mixtral", "attention_bias ignored", attention_bias=True),
    case("mixtral", "top-4 of 4", num_experts_per_tok=4),
    case("mixtral", "sliding_window 8 tp2", sliding_window=8, tp=2),
    case("qwen2", "sliding from layer 1", use_sliding_window=True, sliding_window=8, max_window_layers=1),
    case("qwen2", "sliding every layer", use_sliding_window=True, sliding_window=8, max_window_layers=0, tp=2),
    case("qwen2", "window unused", use_sliding_window=False, sliding_window=8),
    case("qwen2", "layer_types listed", use_sliding_window=True, sliding_window=8, layer_types=["sliding_attention", "full_attention"]),
    case("qwen2_moe", "top-1", num_experts_per_tok=1),
    case("qwen2_moe", "top-4 of 4 renormalised", num_experts_per_tok=4, norm_topk_prob=True),
    case("qwen2_moe", "norm_topk_prob", norm_topk_prob=True, tp=2),
    case("qwen2_moe", "decoder_sparse_step 2", decoder_sparse_step=2),
    case("qwen2_moe", "qkv_bias false", qkv_bias=False),
    case("qwen2_moe", "sliding as transformers 5 lists it", use_sliding_window=True, sliding_window=8, max_window_layers=2, tp=2),
    case("qwen2_moe", "mlp_only_layers", mlp_only_layers=[0]),
    case("qwen2_moe", "wider shared expert", shared_expert_intermediate_size=40),
    case("qwen2_moe", "no shared expert", shared_expert_intermediate_size=0),
    case("qwen2_moe", "decoder_sparse_step 3: all dense", decoder_sparse_step=3),
    case("qwen2_moe", "sparse step and mlp_only_layers", num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[3]),
    case("gemma", "hidden_act gelu", hidden_act="gelu"),  # the legacy name of the tanh approximation
    case("gemma", "hidden_act silu", hidden_act="silu"),
    case("gemma", "hidden_activation ignored", hidden_act="silu", hidden_activation="gelu"),  # transformers 5 reads hidden_act
    case("gemma", "attention_bias", attention_bias=True),
    case("gemma2", "soft-caps small", attn_logit_softcapping=2.0, final_logit_softcapping=3.0),
    case("gemma2", "no soft-caps", attn_logit_softcapping=None, final_logit_softcapping=None),
    case("gemma2", "query_pre_attn_scalar 3", query_pre_attn_scalar=3),
    case("gemma2", "sliding_window 3 tp2", sliding_window=3, tp=2),
    case("gemma2", "attention_bias", attention_bias=True),
    case("gemma2", "layer_types listed", num_hidden_layers=3, layer_types=["full_attention", "sliding_attention", "sliding_attention"]),
    case("gemma2", "hidden_activation gelu", hidden_activation="gelu"),
    case("gemma3_text", "sliding_window_pattern 2", layer_types=None, sliding_window_pattern=2, num_hidden_layers=4),
    case("gemma3_text", "query_pre_attn_scalar 5", query_pre_attn_scalar=5),
    case("gemma3_text", "soft-caps", attn_logit_softcapping=2.0, final_logit_softcapping=3.0),  # transformers applies the final one only
    case("gemma3_text", "both layer types scaled",
         rope={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "yarn", "factor": 2.0, "rope_theta": 500.0, "original_max_position_embeddings": 32}}),
    case("gemma3_text", "attention_bias tp2", attention_bias=True, tp=2),
    # transformers 5 reads yarn's truncate from the outer rope_parameters, not the layer type's: always true
    case("gemma3_text", "yarn truncate ignored", rope=rope_with("gemma3_text", {"rope_type": "yarn", "factor": 2.0, "truncate": False,
                                                                                 "original_max_position_embeddings": 32, "beta_fast": 4.0, "beta_slow": 0.5})),
    case("phi3", "partial_rotary_factor 0.5", rope={**PLAIN, "partial_rotary_factor": 0.5}),
    case("phi3", "partial_rotary_factor 0.75 of 12", rope={**PLAIN, "partial_rotary_factor": 0.75}, hidden_size=48),  # 9: 5 pairs
    case("phi3", "partial longrope", rope={**PLAIN, "rope_type": "longrope", "partial_rotary_factor": 0.5,
                                           "short_factor": [1.0, 2.0], "long_factor": [3.0, 9.0]},
         original_max_position_embeddings=16, tp=2),
    case("phi3", "sliding_window 8", sliding_window=8),
    case("phi3", "attention_bias ignored", attention_bias=True),
    case("qwen3", "sliding from layer 1", use_sliding_window=True, sliding_window=8, max_window_layers=1),
    case("qwen3", "attention_bias tp2", attention_bias=True, tp=2),
    case("qwen3", "layer_types listed", use_sliding_window=True, sliding_window=8, layer_types=["sliding_attention", "full_attention"]),
    case("qwen3", "head_dim 24, one kv head tp2", head_dim=24, num_key_value_heads=1, tp=2),
    case("qwen3_moe", "top-1", num_experts_per_tok=1),
    case("qwen3_moe", "top-4 of 4 renormalised", num_experts_per_tok=4, norm_topk_prob=True),
    case("qwen3_moe", "decoder_sparse_step 2", decoder_sparse_step=2),
    case("qwen3_moe", "mlp_only_layers", mlp_only_layers=[0], tp=2),
    case("qwen3_moe", "attention_bias, mlp_bias ignored", attention_bias=True, mlp_bias=True),
    case("qwen3_moe", "sliding every layer", use_sliding_window=True, sliding_window=8),
    case("qwen3_moe", "max_window_layers ignored", use_sliding_window=True, sliding_window=8, max_window_layers=1, tp=2),
    case("deepseek_v2", "q_lora_rank", q_lora_rank=24),
    case("deepseek_v2", "top-1 greedy", num_experts_per_tok=1),
    case("deepseek_v2", "all experts", num_experts_per_tok=8),
    case("deepseek_v2", "group_limited_greedy", topk_method="group_limited_greedy", n_group=4, topk_group=1, num_experts_per_tok=2),
    case("deepseek_v2", "routed_scaling_factor", routed_scaling_factor=2.5, tp=2),
    case("deepseek_v2", "no dense layer", first_k_dense_replace=0),
    case("deepseek_v2", "two dense layers", first_k_dense_replace=2),
    case("deepseek_v2", "three shared experts", n_shared_experts=3),
    case("deepseek_v2", "groups given, greedy", n_group=4, topk_group=1),  # transformers' greedy ignores them
    case("deepseek_v2", "attention_bias", attention_bias=True),
    case("deepseek_v2", "mlp_bias", mlp_bias=True, tp=2),
    case("deepseek_v3", "not renormalised", norm_topk_prob=False),
    case("deepseek_v3", "one group", n_group=1, topk_group=1),
    case("deepseek_v3", "two groups, one chosen", n_group=2, topk_group=1, num_experts_per_tok=3),
    case("deepseek_v3", "top-1", num_experts_per_tok=1),
    case("deepseek_v3", "all eligible", n_group=2, topk_group=2, num_experts_per_tok=8),
    case("deepseek_v3", "routed_scaling_factor 1", routed_scaling_factor=1.0),
    case("deepseek_v3", "no dense layer", first_k_dense_replace=0, tp=2),
    case("deepseek_v3", "rope halves", rope_interleave=False),
    case("deepseek_v3", "q_proj", q_lora_rank=None),
    case("deepseek_v3", "attention_bias", attention_bias=True),
    case("deepseek_v3", "one shared expert", n_shared_experts=1),
    case("deepseek_v3", "no shared expert", n_shared_experts=0),
    case("deepseek_v3", "every layer dense", first_k_dense_replace=3),
    case("deepseek_v3", "first_k_dense_replace beyond the layers", first_k_dense_replace=5),
    case("deepseek_v3", "other latent widths", kv_lora_rank=8, q_lora_rank=12, qk_nope_head_dim=4, qk_rope_head_dim=16, v_head_dim=20),
    case("deepseek_v2", "other latent widths tp2", kv_lora_rank=24, qk_nope_head_dim=12, qk_rope_head_dim=4, v_head_dim=6, tp=2),
    case("deepseek_v3", "routed_scaling_factor, not renormalised", norm_topk_prob=False, routed_scaling_factor=0.5, tp=2),
    case("gpt_oss", "swiglu_limit 7", swiglu_limit=7.0),
    case("gpt_oss", "swiglu_alpha 1", swiglu_alpha=1.0),
    case("gpt_oss", "top-1", num_experts_per_tok=1),
    case("gpt_oss", "top-4 of 4", num_experts_per_tok=4, tp=2),
    case("gpt_oss", "no attention_bias", attention_bias=False),
    case("gpt_oss", "sliding_window 3", sliding_window=3),
    case("gpt_oss", "its own yarn", rope={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                                         "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096}),
    case("gpt_oss", "layer_types listed", num_hidden_layers=4,
         layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"]),
    case("olmo2", "rms_norm_eps 0.1", rms_norm_eps=0.1),
    case("olmo2", "attention_bias tp2", attention_bias=True, tp=2),
    case("olmo2", "one kv head tp2", num_key_value_heads=1, tp=2),
    case("smollm3", "no_rope_layer_interval 3", no_rope_layer_interval=3),
    case("smollm3", "no_rope_layers listed", no_rope_layers=[0, 1, 1, 0]),
    case("smollm3", "sliding on no-rope layers", use_sliding_window=True, sliding_window=8),
    case("smollm3", "t4 sliding without layer_types", use_sliding_window=True, sliding_window=8, t4="drop layer_types"),
    case("smollm3", "attention and mlp biases", attention_bias=True, mlp_bias=True),
    case("granite", "other multipliers", embedding_multiplier=12.0, attention_multiplier=0.0625, residual_multiplier=0.22,
         logits_scaling=8.0),
    case("granite", "attention_bias and mlp_bias", attention_bias=True, mlp_bias=True, tp=2),
    case("granitemoe", "top-1", num_experts_per_tok=1),
    case("granitemoe", "top-4 of 4", num_experts_per_tok=4),
    case("granitemoe", "attention_bias", attention_bias=True),
    case("granitemoeshared", "no shared MLP", shared_intermediate_size=0),
    case("granitemoeshared", "top-1 tp2", num_experts_per_tok=1, tp=2),
    case("glm4", "partial_rotary_factor 0.25", rope={**GLM_ROPE, "partial_rotary_factor": 0.25}),
    case("glm4", "whole head turning", rope={**GLM_ROPE, "partial_rotary_factor": 1.0}),
    case("glm4", "5 of 16 turning", rope={**GLM_ROPE, "partial_rotary_factor": 0.3125}, tp=2),
    case("glm4", "no attention_bias", attention_bias=False),
    case("glm4", "rms_norm_eps 0.1", rms_norm_eps=0.1),
    case("llama4_text", "every layer sparse", interleave_moe_layer_step=1),
    case("llama4_text", "top-2", num_experts_per_tok=2),
    case("llama4_text", "no_rope_layer_interval 2", no_rope_layer_interval=2, tp=2),
    case("llama4_text", "no temperature tuning", attn_temperature_tuning=False),
    case("llama4_text", "no qk norm", use_qk_norm=False),
    case("llama4_text", "floor_scale 1", floor_scale=1, attn_scale=1.0),
    case("llama4_text", "chunks of 3", attention_chunk_size=3),
    case("llama4_text", "moe_layers listed", moe_layers=[0, 3]),
    case("llama4_text", "interleave_moe_layer_step 3", interleave_moe_layer_step=3),
    case("llama4_text", "no sparse layer", moe_layers=[]),
    case("llama4_text", "no_rope_layers listed", no_rope_layers=[0, 1, 1, 0]),
    case("llama4_text", "layer_types listed", layer_types=["full_attention", "chunked_attention", "full_attention", "chunked_attention"]),
    case("llama4_text", "Scout's llama3", rope={"rope_type": "llama3", "rope_theta": 100.0, "factor": 16.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 1.0, "original_max_position_embeddings": 8}),
    case("llama4_text", "attention_bias", attention_bias=True),
]

# config.json as transformers 4 wrote it: rope_theta (and partial_rotary_factor) at the top level, the
# scaling as rope_scaling with its "type".
TRANSFORMERS4 = [
    case("llama", "t4 linear", rope={**PLAIN, "rope_theta": 500.0, "rope_type": "linear", "factor": 2.0}, t4="type"),
    case("llama", "t4 llama3", rope={**PLAIN, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 16}, t4="rope_type"),
    case("llama", "t4 dynamic", rope={**PLAIN, "rope_type": "dynamic", "factor": 4.0}, max_position_embeddings=16, t4="type"),
    case("mistral", "t4 theta", rope={**PLAIN, "rope_theta": 1e6}, t4="type"),
    case("mixtral", "t4 theta", rope={**PLAIN, "rope_theta": 500.0}, t4="type"),
    case("qwen2", "t4 yarn", rope={**PLAIN, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}, t4="type"),
    case("qwen3", "t4 yarn", rope={**PLAIN, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}, t4="type"),
    case("phi3", "t4 longrope", rope={**PLAIN, "rope_type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
                                     "long_factor": [1.0, 4.0, 16.0, 64.0]}, original_max_position_embeddings=16, t4="type"),
    case("phi3", "t4 partial", rope={**PLAIN, "partial_rotary_factor": 0.5, "rope_theta": 500.0}, t4="type"),
    case("gemma3_text", "t4 linear on global layers",
         rope={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "default", "rope_theta": 500.0}},
         layer_types=None, sliding_window_pattern=2, num_hidden_layers=4, t4="rope_type"),
    case("glm4", "t4 partial", rope={**GLM_ROPE, "partial_rotary_factor": 0.25}, t4="type"),
    case("deepseek_v3", "t4 yarn mscale", rope={**PLAIN, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                               "mscale": 1.0, "mscale_all_dim": 0.8}, t4="type"),
    case("deepseek_v2", "t4 yarn", rope={**PLAIN, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                        "mscale": 0.7, "mscale_all_dim": 0.7}, t4="type"),
    case("llama4_text", "t4 theta", rope={**FAST, "rope_theta": 50.0}, t4="type"),
    case("llama", "t4 llama3 without its context", rope={**PLAIN, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0}, max_position_embeddings=48, t4="rope_type"),
    case("qwen2", "t4 yarn without its context", rope={**PLAIN, "rope_type": "yarn", "factor": 2.0}, max_position_embeddings=32,
         t4="rope_type"),
    case("phi3", "t4 su", rope={**PLAIN, "rope_type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 4.0, 16.0, 64.0]},
         original_max_position_embeddings=16, t4="type=su"),  # the legacy name of longrope
    case("phi3", "t4 longrope with its factor", rope={**PLAIN, "rope_type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
                                                     "long_factor": [1.0, 4.0, 16.0, 64.0], "factor": 2.0},
         original_max_position_embeddings=16, t4="type"),
    # each family's own default base
    case("mixtral", "t4 no rope_theta", rope={**PLAIN, "rope_theta": 1e6}, t4="bare"),
    case("smollm3", "t4 no rope_theta", rope={**PLAIN, "rope_theta": 2e6}, t4="bare"),
    case("gpt_oss", "t4 no rope settings", rope={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                                                 "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096}, t4="bare"),
    case("llama4_text", "t4 no rope_theta", rope={**PLAIN, "rope_theta": 500000.0}, t4="bare"),
    case("gemma3_text", "t4 no rope_theta", rope={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
         layer_types=None, sliding_window_pattern=2, num_hidden_layers=4, t4="bare"),
]

def transformers4(family):
    """Every family's config.json as transformers 4 wrote it: its base at the top level, a scaling as
    rope_scaling ("type" naming it; Gemma 3's global layers' under "rope_type", which is all it reads)."""
    if family == "phi3":
        return []  # its longrope above
    if family == "gpt_oss":  # without rope_scaling transformers runs its yarn
        return [case(family, "t4 yarn", rope={**FAMILIES[family][1], "rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32,
                                             "rope_theta": 500.0}, t4="type")]
    scaled = rope_with(family, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32, "rope_theta": 500.0})
    if family == "gemma3_text":
        return [case(family, "t4 yarn", rope=scaled, layer_types=None, sliding_window_pattern=2, num_hidden_layers=4, t4="rope_type")]
    return [case(family, "t4 theta", rope=rope_with(family, {"rope_theta": 500.0}), t4="type"),
            case(family, "t4 yarn", rope=scaled, t4="type")]


CASES = [c for f in FAMILIES for c in shapes(f) + rope_variations(f) + transformers4(f)] + OWN + TRANSFORMERS4


def make(family, rope, sizes, seed):
    cls, base_rope, base = FAMILIES[family]
    # None drops a base size (the class's default then), except where it is itself a setting.
    sizes = {k: v for k, v in {**base, **sizes}.items() if v is not None or k in NONE_MEANS}
    model = build(cls, copy.deepcopy(rope or base_rope), seed=seed, **sizes)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, b in list(model.named_buffers()) + list(model.named_parameters()):
            if name.endswith("e_score_correction_bias"):  # as large as the sigmoid scores' spread
                b.copy_(torch.randn(b.shape, generator=g) * 0.3)
            if name.endswith("sinks"):  # as large as the scores
                b.copy_(torch.randn(b.shape, generator=g) * 1.5)
            if family in GEMMAS and "norm" in name:  # Gemma's norms scale by 1 + w: as much as the others'
                b.sub_(1.0)
    return model


def as_transformers4(cfg, type_key):
    """config.json as transformers 4 wrote it: the rotary settings outside rope_parameters, the
    scaling's type under `type_key` ("type" in the older models, "rope_type" in the newer; "type=su":
    under "type", named "su"); "bare": no rotary settings at all (the model's are its class's defaults);
    "drop layer_types": without them too."""
    rope = cfg.pop("rope_parameters")
    if "full_attention" in rope:  # Gemma 3: rope_theta, rope_local_base_freq, the global layers' scaling
        full, sliding = rope["full_attention"], rope["sliding_attention"]
        cfg["rope_theta"], cfg["rope_local_base_freq"] = full.pop("rope_theta"), sliding["rope_theta"]
        cfg.pop("layer_types", None)
        rope = full
    else:
        cfg["rope_theta"] = rope.pop("rope_theta")
    if "partial_rotary_factor" in rope:
        cfg["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
    kind = rope.pop("rope_type")
    type_key, _, renamed = type_key.partition("=")
    cfg["rope_scaling"] = None if kind == "default" else {type_key: renamed or kind, **rope}
    if type_key == "bare":
        for key in ("rope_theta", "rope_local_base_freq", "rope_scaling"):
            cfg.pop(key, None)
    if type_key == "drop layer_types":  # transformers 5 derives them
        cfg.pop("layer_types")
    return cfg


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Models this small run fastest on one thread (several contend on a shared machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tokens(n, vocab, seed):
    return torch.randint(3, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("family, rope, sizes, tp, t4, seed", CASES)
def test_logits_match_transformers(tmp_path, family, rope, sizes, tp, t4, seed):
    model = make(family, rope, sizes, seed)
    model.save_pretrained(tmp_path)
    if t4:
        cfg = as_transformers4(json.loads((tmp_path / "config.json").read_text()), t4)
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32, attn_implementation="eager").eval()
        ids = tokens(LONG, model.config.vocab_size, seed)
        assert error(reference(again, ids), reference(model, ids)) < TOLERANCE  # transformers 5 reads it as the same model
    llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp, threads=1)  # one thread a rank, as one_torch_thread
    short = tokens(7, model.config.vocab_size, seed)
    worst = error(engine_logits(llm, short), reference(model, short))
    # The long sequence, then a few tokens generated from the cache: each position's logits as
    # transformers' over the whole sequence (dynamic rope's frequencies depend on its length: the prompt alone).
    ids = tokens(LONG, model.config.vocab_size, seed + LONG)
    decode = 0 if "dynamic" in json.dumps(model.config.rope_parameters) else 3
    out = llm.generate(ids, wl.SamplingParams(temperature=0, max_tokens=decode + 1), return_logits=True)[0]
    got = np.array(out.logits)
    assert len(got) >= LONG
    worst = max(worst, error(got, reference(model, ids + out.token_ids[:decode])[:len(got)]))
    assert worst < TOLERANCE, (worst, llm.config["features"])


def rope_update(**fields):
    return lambda cfg: cfg["rope_parameters"].update(fields)


def as_rope_scaling(scaling):
    def edit(cfg):
        cfg.pop("rope_parameters")
        cfg.update(rope_theta=1e6, rope_scaling=scaling)
    return edit


# What transformers 5 runs otherwise than the engine could, or cannot run itself: refused by name.
# Each: the family, its sizes, an edit of its config.json, what the refusal says.
REFUSED = [
    # transformers' Llama turns whole heads; its scaled frequencies then do not fit the head
    ("llama", {}, rope_update(rope_type="linear", factor=2.0, partial_rotary_factor=0.5),
     r"'rope_parameters.partial_rotary_factor'.*turn whole heads"),
    # yarn's ramp over an odd rotary count (GLM-4's 5 of 10) has a value fewer than its frequencies
    ("glm4", dict(head_dim=10), rope_update(rope_type="yarn", factor=2.0, original_max_position_embeddings=32),
     r"'partial_rotary_factor'.*yarn needs an even count"),
    # EmbeddingGemma's bidirectional attention
    ("gemma3_text", {}, lambda cfg: cfg.update(use_bidirectional_attention=True), r"'use_bidirectional_attention'.*not supported"),
    # Gemma 3's rotary settings are per layer type: transformers 5 ignores a flat rope_parameters, and
    # a transformers 4 rope_scaling naming its type by "type" alone
    ("gemma3_text", {}, lambda cfg: cfg.update(rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
     r"'rope_parameters'.*per layer type"),
    ("gemma3_text", {}, as_rope_scaling({"type": "linear", "factor": 8.0}), r"'rope_scaling.type'.*rope_type only"),
    # transformers' shared expert of no units still adds its down_proj bias
    ("deepseek_v2", dict(mlp_bias=True, n_shared_experts=0), lambda cfg: None, r"'mlp_bias'.*shared expert of no units"),
]


@pytest.mark.parametrize("family, sizes, edit, match", REFUSED, ids=[f"{r[0]}-{r[3].split(chr(39))[1]}" for r in REFUSED])
def test_what_the_engine_cannot_follow_is_refused_by_name(tmp_path, family, sizes, edit, match):
    make(family, None, sizes, 7).save_pretrained(tmp_path)
    refused_after(tmp_path, edit, match)
