"""The 2026 families through the family seam (src/families/), checked against transformers 5
itself: tiny random models built by the pinned transformers (from_config, fixed seeds, weights
scaled so every part moves the logits), saved with save_pretrained (config.json exactly as
transformers 5 writes it), run by transformers and by the engine; logits equal at every position,
in one process and with two tensor-parallel ranks, and the family's own part (q/k norms, routing)
changes them measurably, so a part the engine ignored would fail here."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, PLAIN, SIZES, TOLERANCE, build, engine_logits, error, reference, sequence, run_both  # noqa: E402

QWEN3 = dict(head_dim=16)  # head_dim != hidden / heads, as in the released Qwen3 models
QWEN3_MOE = dict(head_dim=16, moe_intermediate_size=24, num_local_experts=4, num_experts_per_tok=2)


@pytest.mark.parametrize("tp", [1, 2])
def test_qwen3_logits_match_transformers(tmp_path, tp):
    model = build(transformers.Qwen3Config, PLAIN, **QWEN3)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "qwen3" and "q/k RMSNorm per head" in llm.config["features"]
    # The q/k norms matter: the same model with them at one changes transformers' own logits.
    plain = build(transformers.Qwen3Config, PLAIN, **QWEN3)
    state = model.state_dict()
    plain.load_state_dict({k: (torch.ones_like(v) if k.endswith(("q_norm.weight", "k_norm.weight")) else v)
                           for k, v in state.items()})
    ids = sequence(19, seed=19)
    assert error(reference(plain, ids), reference(model, ids)) > CHANGED


@pytest.mark.parametrize("norm_topk_prob", [False, True])
@pytest.mark.parametrize("tp", [1, 2])
def test_qwen3_moe_logits_match_transformers(tmp_path, tp, norm_topk_prob):
    model = build(transformers.Qwen3MoeConfig, PLAIN, **QWEN3_MOE, norm_topk_prob=norm_topk_prob,
                  mlp_only_layers=[1], intermediate_size=40)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["num_local_experts"] == 4 and cfg["mlp_only_layers"] == [1]
    assert f"4 experts, top-2{' renormalised' if norm_topk_prob else ''}" in llm.config["features"]


def test_qwen3_moe_under_transformers_4s_key_and_a_disagreement(tmp_path):
    """transformers 4 wrote num_experts; both are read, and a config giving both, differently, is refused."""
    model = build(transformers.Qwen3MoeConfig, PLAIN, **QWEN3_MOE)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["num_experts"] = cfg.pop("num_local_experts")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    ids = sequence(7, seed=7)
    assert error(engine_logits(wl.LLM(str(tmp_path)), ids), reference(model, ids)) < TOLERANCE
    cfg["num_local_experts"] = 8
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(wl.Error, match="num_experts.*disagrees with num_local_experts") as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


def test_qwen3_sliding_layers_from_max_window_layers(tmp_path):
    """use_sliding_window with max_window_layers 1: layer 1 attends within 4 positions, as
    transformers' Qwen3 does (its layer_types says so, and the engine follows the same rule)."""
    model = build(transformers.Qwen3Config, PLAIN, **QWEN3, use_sliding_window=True, sliding_window=4,
                  max_window_layers=1)
    assert model.config.layer_types == ["full_attention", "sliding_attention"]
    llm, _ = run_both(model, tmp_path, 1, lengths=(3, 11))
    assert "sliding window 4 (from layer 1)" in llm.config["features"]


def test_the_config_json_weightloader_writes_for_qwen3_is_one_transformers_reads(tmp_path):
    """convert writes config.json from the engine's description: transformers builds the same
    Qwen3 from it (the family's class and keys)."""
    model = build(transformers.Qwen3MoeConfig, PLAIN, **QWEN3_MOE, norm_topk_prob=True)
    model.save_pretrained(tmp_path / "src")
    cli = os.environ.get("WL_CLI", "build/weightloader")
    done = subprocess.run([cli, "convert", str(tmp_path / "src"), str(tmp_path / "out"), "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert written["architectures"] == ["Qwen3MoeForCausalLM"] and written["num_local_experts"] == 4
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=torch.float32).eval()
    ids = sequence(7, seed=7)
    assert error(reference(again, ids), reference(model, ids)) < TOLERANCE


GEMMA3 = dict(head_dim=16, sliding_window=4, num_hidden_layers=4, query_pre_attn_scalar=16,
              layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"])
GEMMA3_ROPE = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}


@pytest.mark.parametrize("tp", [1, 2])
def test_gemma3_text_logits_match_transformers(tmp_path, tp):
    """Gemma 3's text model: sliding and global layers as layer_types lists them, each kind with
    its own rope base, q/k norms with (1+w), four norms per block, scaled embeddings, tied head."""
    model = build(transformers.Gemma3TextConfig, GEMMA3_ROPE, **GEMMA3)
    llm, cfg = run_both(model, tmp_path, tp, lengths=(1, 6, 13))
    assert cfg["model_type"] == "gemma3_text" and cfg["layer_types"] == GEMMA3["layer_types"]
    features = llm.config["features"]
    assert "sliding window 4 (3 of 4 layers, as listed)" in features and "sliding layers' rope theta 10000" in features
    # Each part matters: another layer pattern, or one rope base for all, changes transformers' logits.
    ids = sequence(13, seed=13)
    other = build(transformers.Gemma3TextConfig, GEMMA3_ROPE, **{**GEMMA3, "layer_types": ["full_attention"] * 4})
    other.load_state_dict(model.state_dict())
    assert error(reference(other, ids), reference(model, ids)) > CHANGED
    one_base = build(transformers.Gemma3TextConfig, {k: GEMMA3_ROPE["full_attention"] for k in GEMMA3_ROPE}, **GEMMA3)
    one_base.load_state_dict(model.state_dict())
    assert error(reference(one_base, ids), reference(model, ids)) > CHANGED


def test_gemma3_text_as_transformers_4_wrote_it(tmp_path):
    """transformers 4's Gemma 3 config.json: rope_theta and rope_local_base_freq, the layers from
    sliding_window_pattern; the same logits. A rope_local_base_freq that contradicts
    rope_parameters is refused by name."""
    model = build(transformers.Gemma3TextConfig, GEMMA3_ROPE,
                  **{**GEMMA3, "layer_types": ["sliding_attention", "full_attention"] * 2})
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    v5 = dict(cfg)
    for key in ("rope_parameters", "layer_types"):
        del cfg[key]
    cfg.update(rope_theta=1e6, rope_local_base_freq=1e4, sliding_window_pattern=2)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    ids = sequence(9, seed=9)
    assert error(engine_logits(wl.LLM(str(tmp_path)), ids), reference(model, ids)) < TOLERANCE
    (tmp_path / "config.json").write_text(json.dumps({**v5, "rope_local_base_freq": 5e3}))
    with pytest.raises(wl.Error, match="rope_local_base_freq.*disagrees") as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


@pytest.mark.parametrize("tp", [1, 2])
def test_granite_multipliers_match_transformers(tmp_path, tp):
    """Granite: embeddings, attention scores and each block's output scaled by its multipliers,
    logits divided by logits_scaling; without them transformers' own logits differ."""
    multipliers = dict(embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=4.0)
    model = build(transformers.GraniteConfig, PLAIN, **multipliers)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "granite" and "multipliers: embedding 3, attention 0.2, residual 0.5, logits / 4" in llm.config["features"]
    plain = build(transformers.GraniteConfig, PLAIN)
    plain.load_state_dict(model.state_dict())
    ids = sequence(19, seed=19)
    assert error(reference(plain, ids), reference(model, ids)) > CHANGED


@pytest.mark.parametrize("tp", [1, 2])
def test_smollm3_layers_without_rope_match_transformers(tmp_path, tp):
    """SmolLM3: every no_rope_layer_interval-th layer does not turn (here layers 1 and 3)."""
    model = build(transformers.SmolLM3Config, PLAIN, num_hidden_layers=4, no_rope_layer_interval=2, tie_word_embeddings=True)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["no_rope_layers"] == [1, 0, 1, 0] and "2 of 4 layers without rope" in llm.config["features"]
    every = build(transformers.SmolLM3Config, PLAIN, num_hidden_layers=4, no_rope_layers=[1, 1, 1, 1], tie_word_embeddings=True)
    every.load_state_dict(model.state_dict())
    ids = sequence(19, seed=19)
    assert error(reference(every, ids), reference(model, ids)) > CHANGED


@pytest.mark.parametrize("cls, key, value", [
    ("LlamaConfig", "residual_multiplier", 0.5),
    ("Qwen3Config", "no_rope_layers", [1, 0]),
], ids=["granite field on llama", "smollm3 field on qwen3"])
def test_another_familys_field_is_refused_by_name(tmp_path, cls, key, value):
    model = build(getattr(transformers, cls), PLAIN)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, key: value}))
    with pytest.raises(wl.Error, match=key) as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_olmo2_post_norms_and_whole_projection_qk_norm_match_transformers(tmp_path, tp):
    """OLMo 2: each sublayer's output normalised instead of its input, and q and k normalised over
    the whole projection; split over ranks (tp 4 shares each of the 2 kv heads between two ranks),
    the sums of squares are added across them."""
    model = build(transformers.Olmo2Config, PLAIN)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "olmo2"
    assert "q/k RMSNorm over the whole projection" in llm.config["features"]
    per_head = build(transformers.Olmo2Config, PLAIN)
    state = model.state_dict()
    per_head.load_state_dict({k: (torch.ones_like(v) if k.endswith(("q_norm.weight", "k_norm.weight")) else v)
                              for k, v in state.items()})
    ids = sequence(19, seed=19)
    assert error(reference(per_head, ids), reference(model, ids)) > CHANGED
