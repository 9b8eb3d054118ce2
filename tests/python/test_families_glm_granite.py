"""GLM-4 and Granite-MoE through the family seam (src/families/glm4.cpp, granitemoe*.cpp), checked
against transformers 5 itself: tiny random models built by the pinned transformers (from_config,
fixed seeds), saved with save_pretrained, logits equal at every position in one process and with
two tensor-parallel ranks (heads split, experts split inside). Each part of the family (GLM-4's
output norms, q/k/v biases, partial rotary in adjacent pairs; Granite's multipliers, routing and
shared MLP) changes transformers' own logits measurably, so a part the engine ignored would fail here."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, PLAIN, TOLERANCE, build, engine_logits, error, reference, sequence, run_both, changed_logits, edit_at  # noqa: E402

# head_dim 16 of which partial_rotary_factor 0.5 turns; GLM-4's config default for the rotary part.
GLM_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
GLM4 = dict(head_dim=16)


def changed(model, rope, edit=None, **config):
    """transformers' logits of `model`'s weights, edited, or under other config values, against its own."""
    return changed_logits(model, build(type(model.config), rope, **{**model.sizes, **config}), edit)


def cli(*args):
    return subprocess.run([os.environ.get("WL_CLI", "build/weightloader"), *args], capture_output=True, text=True)


@pytest.mark.parametrize("tp", [1, 2])
def test_glm4_logits_match_transformers(tmp_path, tp):
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "glm4" and cfg["attention_bias"] is True
    features = llm.config["features"]
    for part in ("q/k/v biases", "partial rotary (8 of 16)", "four norms per block (GLM's)", "rope in adjacent pairs",
                 "fused gate_up_proj stored"):
        assert part in features, features


def test_glm4_parts_change_transformers_logits(monkeypatch):
    """What the engine follows is not decoration: each part moves transformers' own logits."""
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    assert changed(model, GLM_ROPE, edit_at("post_self_attn_layernorm.weight", torch.ones_like)) > CHANGED
    assert changed(model, GLM_ROPE, edit_at("post_mlp_layernorm.weight", torch.ones_like)) > CHANGED
    assert changed(model, GLM_ROPE, edit_at("k_proj.bias", torch.zeros_like)) > CHANGED
    assert changed(model, {**GLM_ROPE, "partial_rotary_factor": 1.0}) > CHANGED
    assert changed(model, {**GLM_ROPE, "rope_theta": 1e30}) > CHANGED  # no dimension turning at all
    # The pairs: the same rotary part turning as halves (j with j + 8 / 2, Llama's layout).
    from transformers.models.glm4 import modeling_glm4

    def halves(q, k, cos, sin, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        d = cos.shape[-1]

        def turn(x):
            r, rest = x[..., :d], x[..., d:]
            rotated = torch.cat((-r[..., d // 2:], r[..., :d // 2]), dim=-1)
            return torch.cat((r * cos + rotated * sin, rest), dim=-1)
        return turn(q), turn(k)

    ids = sequence(19, seed=19)
    want = reference(model, ids)
    monkeypatch.setattr(modeling_glm4, "apply_rotary_pos_emb", halves)
    assert error(reference(model, ids), want) > CHANGED


def test_glm4_without_attention_bias_and_partial_rotary_default(tmp_path):
    """attention_bias false: no biases; a config.json without partial_rotary_factor turns half of
    each head, as transformers' GLM-4 does."""
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4, attention_bias=False)
    assert "model.layers.0.self_attn.q_proj.bias" not in model.state_dict()
    llm, cfg = run_both(model, tmp_path, 2)
    assert "biases" not in llm.config["features"]
    cfg.pop("partial_rotary_factor")
    cfg["rope_parameters"].pop("partial_rotary_factor")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert "partial rotary (8 of 16)" in wl.LLM(str(tmp_path)).config["features"]


def test_inspect_describes_glm4(tmp_path):
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    model.save_pretrained(tmp_path / "m")
    done = cli("inspect", str(tmp_path / "m"))
    assert done.returncode == 0, done.stderr
    assert "glm4: " in done.stdout and "rope in adjacent pairs" in done.stdout


# 4 experts of 24 units, 2 chosen; Granite's multipliers all away from 1.
MULTIPLIERS = dict(embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=4.0)
GRANITE_MOE = dict(MULTIPLIERS, intermediate_size=24, num_local_experts=4, num_experts_per_tok=2)


@pytest.mark.parametrize("tp", [1, 2])
def test_granitemoe_logits_match_transformers(tmp_path, tp):
    model = build(transformers.GraniteMoeConfig, PLAIN, **GRANITE_MOE)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "granitemoe"
    features = llm.config["features"]
    assert "multipliers: embedding 3, attention 0.2, residual 0.5, logits / 4" in features and "4 experts, top-2 renormalised" in features


def test_granitemoe_parts_change_transformers_logits():
    model = build(transformers.GraniteMoeConfig, PLAIN, **GRANITE_MOE)
    for key in MULTIPLIERS:
        assert changed(model, PLAIN, **{key: 1.0}) > CHANGED, key
    assert changed(model, PLAIN, num_experts_per_tok=1) > CHANGED
    # Gate rows, then up rows: the halves of input_linear swapped.
    swap = lambda k, v: torch.cat(v.chunk(2, dim=1)[::-1], dim=1) if k.endswith("experts.gate_up_proj") else v  # noqa: E731
    assert changed(model, PLAIN, swap) > CHANGED


@pytest.mark.parametrize("tp", [1, 2])
def test_granitemoe_shared_logits_match_transformers(tmp_path, tp):
    model = build(transformers.GraniteMoeSharedConfig, PLAIN, **GRANITE_MOE, shared_intermediate_size=16)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "granitemoeshared" and cfg["shared_intermediate_size"] == 16
    assert "shared experts of 16 units" in llm.config["features"]
    assert changed(model, PLAIN, edit_at("shared_mlp.output_linear.weight", torch.zeros_like)) > CHANGED


def test_granitemoe_shared_without_shared_mlp(tmp_path):
    """shared_intermediate_size 0 (the default): no shared MLP, Granite-MoE's model."""
    model = build(transformers.GraniteMoeSharedConfig, PLAIN, **GRANITE_MOE)
    llm, _ = run_both(model, tmp_path, 2)
    assert "shared experts" not in llm.config["features"]


def test_granitemoe_experts_stacked_as_transformers_5_holds_them(tmp_path):
    """The model's own state dict (block_sparse_moe.experts.gate_up_proj, router.weight) saved as
    it is: each expert read from its rows of the stack."""
    from safetensors.torch import save_file
    model = build(transformers.GraniteMoeConfig, PLAIN, **GRANITE_MOE)
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    assert "model.layers.1.block_sparse_moe.experts.gate_up_proj" in state and "model.layers.1.block_sparse_moe.router.weight" in state
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    llm = wl.LLM(str(tmp_path), tensor_parallel_size=2)
    ids = sequence(7, seed=7)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


@pytest.mark.parametrize("cls", ["GraniteMoeConfig", "GraniteMoeSharedConfig"])
def test_inspect_describes_granitemoe(tmp_path, cls):
    model = build(getattr(transformers, cls), PLAIN, **GRANITE_MOE, **({"shared_intermediate_size": 16} if "Shared" in cls else {}))
    model.save_pretrained(tmp_path / "m")
    model_type = model.config.model_type
    done = cli("inspect", str(tmp_path / "m"))
    assert done.returncode == 0, done.stderr
    assert f"{model_type}: " in done.stdout and "4 experts, top-2" in done.stdout and "multipliers" in done.stdout


def test_glm4_converts_to_a_checkpoint_transformers_reads_and_granitemoe_is_refused(tmp_path):
    """GLM-4 through convert: transformers builds the same model from what is written. Granite-MoE's
    experts would be written one tensor per expert, which transformers' GraniteMoe does not read:
    refused by name, nothing written."""
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    model.save_pretrained(tmp_path / "glm")
    done = cli("convert", str(tmp_path / "glm"), str(tmp_path / "glm-out"), "-q")
    assert done.returncode == 0, done.stderr
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "glm-out", dtype=torch.float32).eval()
    ids = sequence(7, seed=7)
    assert error(reference(again, ids), reference(model, ids)) < TOLERANCE
    granite = build(transformers.GraniteMoeConfig, PLAIN, **GRANITE_MOE)
    granite.save_pretrained(tmp_path / "granite")
    done = cli("convert", str(tmp_path / "granite"), str(tmp_path / "granite-out"), "-q")
    assert done.returncode != 0 and "granitemoe cannot be written as safetensors" in done.stderr, done.stderr
    assert not (tmp_path / "granite-out").exists()
