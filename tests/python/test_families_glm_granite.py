"""GLM-4 through the family seam (src/families/glm4.cpp), checked
against transformers 5 itself: tiny random models built by the pinned transformers (from_config,
fixed seeds), saved with save_pretrained, logits equal at every position in one process and with
two tensor-parallel ranks (heads split). Each part of the family (the output norms, q/k/v biases,
partial rotary in adjacent pairs) changes transformers' own logits measurably, so a part the engine
ignored would fail here."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, PLAIN, TOLERANCE, build, engine_logits, error, reference, sequence  # noqa: E402

# head_dim 16 of which partial_rotary_factor 0.5 turns; GLM-4's config default for the rotary part.
GLM_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
GLM4 = dict(head_dim=16)


def run_both(model, folder, tp=1, lengths=(1, 7, 19)):
    model.save_pretrained(folder)
    cfg = json.loads((folder / "config.json").read_text())
    llm = wl.LLM(str(folder), tensor_parallel_size=tp)
    assert llm.config["architecture"] == cfg["model_type"]
    worst = 0.0
    for n in lengths:
        ids = sequence(n, seed=n)
        worst = max(worst, error(engine_logits(llm, ids), reference(model, ids)))
    assert worst < TOLERANCE, worst
    return llm, cfg


def changed(model, rope, edit=None, **config):
    """transformers' logits of `model`'s weights, edited, or under other config values, against its own."""
    other = build(type(model.config), rope, **{**model.sizes, **config})
    state = model.state_dict()
    other.load_state_dict({k: edit(k, v) if edit else v for k, v in state.items()})
    ids = sequence(19, seed=19)
    return error(reference(other, ids), reference(model, ids))


def ones_at(suffix):
    return lambda k, v: torch.ones_like(v) if k.endswith(suffix) else v


def zeros_at(suffix):
    return lambda k, v: torch.zeros_like(v) if k.endswith(suffix) else v


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
    assert changed(model, GLM_ROPE, ones_at("post_self_attn_layernorm.weight")) > CHANGED
    assert changed(model, GLM_ROPE, ones_at("post_mlp_layernorm.weight")) > CHANGED
    assert changed(model, GLM_ROPE, zeros_at("k_proj.bias")) > CHANGED
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


def test_inspect_describes_glm4_and_gguf_is_refused_by_name(tmp_path):
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    model.save_pretrained(tmp_path / "m")
    done = cli("inspect", str(tmp_path / "m"))
    assert done.returncode == 0, done.stderr
    assert "glm4: " in done.stdout and "rope in adjacent pairs" in done.stdout
    done = cli("convert", str(tmp_path / "m"), str(tmp_path / "m.gguf"), "-q")
    assert done.returncode != 0 and "glm4" in done.stderr and "GGUF" in done.stderr, done.stderr
    assert not (tmp_path / "m.gguf").exists()


def test_glm4_converts_to_a_checkpoint_transformers_reads(tmp_path):
    """GLM-4 through convert: transformers builds the same model from what is written."""
    model = build(transformers.Glm4Config, GLM_ROPE, **GLM4)
    model.save_pretrained(tmp_path / "glm")
    done = cli("convert", str(tmp_path / "glm"), str(tmp_path / "glm-out"), "-q")
    assert done.returncode == 0, done.stderr
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "glm-out", dtype=torch.float32).eval()
    ids = sequence(7, seed=7)
    assert error(reference(again, ids), reference(model, ids)) < TOLERANCE
