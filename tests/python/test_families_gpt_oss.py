"""gpt-oss through the family seam (src/families/gpt_oss.cpp), checked against transformers 5
itself: tiny random models built by the pinned transformers (from_config, fixed seeds), saved with
save_pretrained, logits equal at every position in one process and with two tensor-parallel ranks
(heads and their sinks split, experts split inside or whole). Each part of the family (the sinks,
the router's and the experts' biases, the clamped SwiGLU's limit and alpha, gate and up
interleaved, the sliding layers, yarn's truncate false) changes transformers' own logits
measurably, so a part the engine ignored would fail here. The released checkpoints' MXFP4 experts
(_blocks and _scales) give the logits of transformers running the weights they decode to."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, TOLERANCE, build, engine_logits, error, reference, sequence, run_both, changed_logits, edit_at  # noqa: E402

# 4 heads of 8 over 2 kv heads, 4 layers alternating sliding (window 3) and full, 4 experts of 32
# units, 2 chosen; a SwiGLU limit low enough that the clamps bite on these small activations.
SIZES = dict(num_hidden_layers=4, hidden_size=32, intermediate_size=32, head_dim=8, num_local_experts=4,
             num_experts_per_tok=2, sliding_window=3, swiglu_limit=1.0)
# gpt-oss's own rotary settings (transformers' default): yarn x32 of a 4096 context, the band unrounded.
YARN = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
        "original_max_position_embeddings": 4096}


def gpt_oss(rope=YARN, **sizes):
    """A model whose sinks are as large as its scores (build's 0.3 for vectors barely moves them)."""
    model = build(transformers.GptOssConfig, rope, **{**SIZES, **sizes})
    model.sizes = {**SIZES, **sizes}
    g = torch.Generator().manual_seed(77)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("sinks"):
                p.copy_(torch.randn(p.shape, generator=g) * 1.5)
    return model


def changed(model, edit=None, rope=None, **config):
    """transformers' logits of `model`'s weights, edited, or under other config values, against its own."""
    return changed_logits(model, gpt_oss(rope or model.config.rope_parameters, **{**model.sizes, **config}), edit)


@pytest.mark.parametrize("tp", [1, 2])
def test_gpt_oss_logits_match_transformers(tmp_path, tp):
    model = gpt_oss()
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "gpt_oss" and cfg["layer_types"][:2] == ["sliding_attention", "full_attention"]
    assert cfg["attention_bias"] is True and cfg["rope_parameters"]["truncate"] is False
    features = llm.config["features"]
    assert "q/k/v/o biases" in features and "sliding window 3 (alternate layers)" in features and "rope scaling yarn x32" in features
    assert ("4 experts, top-2 renormalised, biased router, stacked experts with biases, clamped SwiGLU (limit 1, alpha 1.702)"
            in features), features
    assert "attention sinks" in features


def test_gpt_oss_parts_change_transformers_logits():
    """What the engine follows is not decoration: each part moves transformers' own logits."""
    model = gpt_oss()
    assert changed(model, edit_at("sinks", lambda v: torch.full_like(v, -1e4))) > CHANGED  # no sinks
    assert changed(model, edit_at("router.bias", torch.zeros_like)) > CHANGED
    assert changed(model, edit_at("gate_up_proj_bias", torch.zeros_like)) > CHANGED
    assert changed(model, edit_at("down_proj_bias", torch.zeros_like)) > CHANGED
    assert changed(model, edit_at("self_attn.o_proj.bias", torch.zeros_like)) > CHANGED
    # gate and up read as halves instead of interleaved columns
    halves = lambda v: torch.cat([v[..., ::2], v[..., 1::2]], dim=-1)  # noqa: E731
    assert changed(model, edit_at("experts.gate_up_proj", halves)) > CHANGED
    assert changed(model, swiglu_limit=7.0) > CHANGED
    assert changed(model, swiglu_alpha=1.0) > CHANGED
    assert changed(model, sliding_window=64) > CHANGED  # the window
    assert changed(model, rope={"rope_type": "default", "rope_theta": 150000.0}) > CHANGED


# Yarn whose blended band's bounds (0.21 and 3.2 dimensions) fall between whole dimensions, over
# frequencies that turn within 19 positions: truncate false (gpt-oss's) differs from rounding them.
UNROUNDED = {**YARN, "rope_theta": 100.0, "original_max_position_embeddings": 256}


@pytest.mark.parametrize("tp", [1, 2])
def test_gpt_oss_yarn_band_unrounded(tmp_path, tp):
    model = gpt_oss(UNROUNDED)
    run_both(model, tmp_path, tp)
    assert changed(model, rope={**UNROUNDED, "truncate": True}) > CHANGED


def test_gpt_oss_defaults_of_its_own(tmp_path):
    """attention_bias, sliding_window and rope_theta left out of config.json: gpt-oss's defaults
    (true, 128, 150000), not the other families'."""
    model = gpt_oss(sliding_window=128)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    for key in ("attention_bias", "sliding_window"):
        del cfg[key]
    del cfg["rope_parameters"]["rope_theta"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    llm = wl.LLM(str(tmp_path))
    assert "sliding window 128" in llm.config["features"] and "q/k/v/o biases" in llm.config["features"]
    ids = sequence(7, seed=7)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_gpt_oss_expert_parallel(tmp_path):
    """Two ranks each holding 2 whole experts (enable_expert_parallel), their biases too."""
    run_both(gpt_oss(), tmp_path, 2, enable_expert_parallel=True)


def test_gpt_oss_tp4_shares_kv_heads(tmp_path):
    """Four ranks over 2 kv heads: each rank one query head and its sink, a kv head shared by two."""
    run_both(gpt_oss(), tmp_path, 4, lengths=(7,))


def test_gpt_oss_layer_types_other_than_every_other_slide_as_listed(tmp_path):
    """The odd layers sliding instead of the even ones: transformers attends as layer_types says, and so does the engine."""
    model = gpt_oss(layer_types=["full_attention", "sliding_attention"] * 2)
    llm, _ = run_both(model, tmp_path, 1)
    assert "sliding window 3 (2 of 4 layers, as listed)" in llm.config["features"]
    assert changed(model, layer_types=["sliding_attention", "full_attention"] * 2) > CHANGED


def mxfp4(dense_shape, seed):
    """Random MXFP4 blocks [E, R, G, 16] and scales [E, R, G] for a stack transformers holds as
    `dense_shape` [E, in, R] (in = 32 G), with exponents that keep the values near in^-0.5."""
    experts, inputs, rows = dense_shape
    g = torch.Generator().manual_seed(seed)
    blocks = torch.randint(0, 256, (experts, rows, inputs // 32, 16), dtype=torch.uint8, generator=g)
    scales = torch.randint(122, 125, (experts, rows, inputs // 32), dtype=torch.uint8, generator=g)
    return blocks, scales


def save_mxfp4(model, tmp_path):
    """`model` saved as the released checkpoints are: every expert stack as MXFP4 _blocks and
    _scales (quantization_config mxfp4), the rest as it is; `model` then holds the weights they
    decode to (transformers' convert_moe_packed_tensors)."""
    from safetensors.torch import save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    model.save_pretrained(tmp_path)
    stored, decoded = {}, {}
    for k, v in model.state_dict().items():
        if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
            blocks, scales = mxfp4(v.shape, seed=len(stored))
            stored[k + "_blocks"], stored[k + "_scales"] = blocks, scales
            decoded[k] = convert_moe_packed_tensors(blocks, scales, dtype=torch.float32)
            assert decoded[k].shape == v.shape
        else:
            stored[k] = decoded[k] = v
    (tmp_path / "model.safetensors").unlink()
    save_file({k: v.contiguous() for k, v in stored.items()}, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                                       "model.embed_tokens", "lm_head"]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model.load_state_dict(decoded)


def test_gpt_oss_mxfp4_experts_give_transformers_logits_of_the_decoded_weights(tmp_path):
    """The released checkpoints' MXFP4 experts, decoded on load: the logits are transformers' on
    the weights they decode to."""
    model = gpt_oss()
    save_mxfp4(model, tmp_path)
    for tp in (1, 2):
        llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp)
        for n in (1, 11):
            ids = sequence(n, seed=n)
            assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_inspect_describes_gpt_oss_and_gguf_llama_cpp_runs_otherwise_and_llama2c_are_refused_by_name(tmp_path):
    """These models' yarn band unrounded (truncate false) is not llama.cpp's, which rounds it
    (test_families_gguf.py writes those it runs)."""
    model = gpt_oss()
    model.save_pretrained(tmp_path / "m")
    cli = os.environ.get("WL_CLI", "build/weightloader")
    done = subprocess.run([cli, "inspect", str(tmp_path / "m")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "gpt_oss: " in done.stdout and "attention sinks" in done.stdout and "clamped SwiGLU" in done.stdout, done.stdout
    done = subprocess.run([cli, "convert", str(tmp_path / "m"), str(tmp_path / "m.gguf"), "-q"], capture_output=True, text=True)
    assert done.returncode != 0 and "GGUF" in done.stderr and "(not truncated)" in done.stderr, done.stderr
    assert not (tmp_path / "m.gguf").exists()
    done = subprocess.run([cli, "convert", str(tmp_path / "m"), str(tmp_path / "m.bin"), "-q"], capture_output=True, text=True)
    assert done.returncode != 0 and "gpt_oss cannot be written as llama2.c" in done.stderr, done.stderr


def test_gpt_oss_config_as_the_released_checkpoints_write_it(tmp_path):
    """openai/gpt-oss's config.json: rope_theta and a rope_scaling object at the top level
    (transformers 4's layout), and OpenAI's own experts_per_token and initial_context_length,
    which transformers leaves unread."""
    model = gpt_oss()
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    rope = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = rope
    cfg["experts_per_token"], cfg["initial_context_length"] = cfg["num_experts_per_tok"], 4096
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    llm = wl.LLM(str(tmp_path))
    ids = sequence(19, seed=19)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE
