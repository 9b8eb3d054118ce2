"""DeepSeek-V2 and DeepSeek-V3 through the family seam (src/families/deepseek_v*.cpp), checked
against transformers 5 itself: tiny random models built by the pinned transformers (from_config,
fixed seeds), saved with save_pretrained, logits equal at every position in one process and with
two tensor-parallel ranks (heads split, experts split inside or whole). Each part of the family
(the latent norms, the rotary part and its layout, the routing bias, groups and scaling, the
shared experts, yarn's softmax scale) changes transformers' own logits measurably, so a part the
engine ignored would fail here."""
import json
import os
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, PLAIN, TOLERANCE, build, engine_logits, error, reference, sequence, run_both, changed_logits, edit_at  # noqa: E402

# Latent attention of 4 heads: queries through a rank-24 bottleneck, a 16-wide kv latent, each
# head's key 8 + 8 wide (nope + rope), its value 12; 8 experts in 4 groups, the best 2 groups
# eligible, 2 chosen, 2 shared experts; layer 0 dense.
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12)
V3 = dict(MLA, num_hidden_layers=3, moe_intermediate_size=16, n_routed_experts=8, n_group=4, topk_group=2,
          num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=1, routed_scaling_factor=2.5)
V2 = dict(MLA, q_lora_rank=None, num_hidden_layers=3, moe_intermediate_size=16, n_routed_experts=8,
          num_experts_per_tok=3, n_shared_experts=1, first_k_dense_replace=1, routed_scaling_factor=1.5)
YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16,
        "mscale": 1.0, "mscale_all_dim": 0.8, "beta_fast": 32, "beta_slow": 1}


def deepseek(cls, rope=PLAIN, **sizes):
    """A model whose correction bias is as large as its sigmoid scores' spread (a zero bias, as
    from_config leaves it, would let a reader that ignores it pass)."""
    model = build(cls, rope, **sizes)
    g = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.3)
    return model


def changed(model, edit=None, **config):
    """transformers' logits of `model`'s weights, edited, or under other config values, against its own."""
    return changed_logits(model, deepseek(type(model.config), model.config.rope_parameters, **{**model.sizes, **config}), edit)


@pytest.mark.parametrize("tp", [1, 2])
def test_deepseek_v3_logits_match_transformers(tmp_path, tp):
    model = deepseek(transformers.DeepseekV3Config, **V3)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "deepseek_v3" and cfg["rope_interleave"] is True
    features = llm.config["features"]
    assert "latent attention (q lora_rank 24, kv_lora_rank 16, qk nope/rope 8/8, v 12, adjacent rope pairs)" in features
    assert ("8 experts, top-2 renormalised, sigmoid scores + correction bias to choose, best 2 of 4 groups (by top-2 sum), "
            "weights x2.5, shared experts of 32 units, layer 0 dense") in features


def test_deepseek_v3_parts_change_transformers_logits():
    """What the engine follows is not decoration: each part moves transformers' own logits."""
    model = deepseek(transformers.DeepseekV3Config, **V3)
    assert changed(model, edit_at("kv_a_layernorm.weight", torch.ones_like)) > CHANGED
    assert changed(model, edit_at("q_a_layernorm.weight", torch.ones_like)) > CHANGED
    assert changed(model, edit_at("e_score_correction_bias", torch.zeros_like)) > CHANGED
    assert changed(model, edit_at("shared_experts.down_proj.weight", torch.zeros_like)) > CHANGED
    assert changed(model, rope_interleave=False) > CHANGED  # the rotary layout
    assert changed(model, n_group=1, topk_group=1) > CHANGED  # the groups
    assert changed(model, routed_scaling_factor=1.0) > CHANGED
    assert changed(model, norm_topk_prob=False) > CHANGED
    # The rotary part: the same weights turning no dimension (theta so large every angle is ~0).
    still = deepseek(transformers.DeepseekV3Config, {"rope_type": "default", "rope_theta": 1e30}, **V3)
    still.load_state_dict(model.state_dict())
    ids = sequence(19, seed=19)
    assert error(reference(still, ids), reference(model, ids)) > CHANGED


@pytest.mark.parametrize("tp", [1, 2])
def test_deepseek_v3_rope_halves_and_no_groups(tmp_path, tp):
    """rope_interleave false turns the rotary part's halves; one group: every expert competes;
    the weights as scored (norm_topk_prob false)."""
    model = deepseek(transformers.DeepseekV3Config, **{**V3, "rope_interleave": False, "n_group": 1, "topk_group": 1,
                                                        "norm_topk_prob": False})
    llm, _ = run_both(model, tmp_path, tp)
    assert "half-split rope pairs" in llm.config["features"]


def test_deepseek_v3_expert_parallel(tmp_path):
    """Two ranks each holding 4 whole experts (enable_expert_parallel) give the same logits."""
    model = deepseek(transformers.DeepseekV3Config, **V3)
    run_both(model, tmp_path, 2, enable_expert_parallel=True)


def test_deepseek_v3_yarn_softmax_scale(tmp_path):
    """Yarn with DeepSeek's mscale pair: cos and sin scale by mscale / mscale_all_dim's ratio, and
    the scores by mscale(factor, mscale_all_dim)^2 (transformers' yarn_apply_mscale)."""
    model = deepseek(transformers.DeepseekV3Config, YARN, **V3)
    llm, cfg = run_both(model, tmp_path, 1, lengths=(7, 40))
    assert cfg["rope_parameters"]["mscale_all_dim"] == 0.8
    m = 0.1 * 0.8 * np.log(4.0) + 1
    assert f"softmax scale {16 ** -0.5 * m * m:.6g}" in llm.config["features"]
    plain = deepseek(transformers.DeepseekV3Config, PLAIN, **V3)
    plain.load_state_dict(model.state_dict())
    ids = sequence(40, seed=40)
    assert error(reference(plain, ids), reference(model, ids)) > CHANGED


@pytest.mark.parametrize("method", ["greedy", "group_limited_greedy"])
@pytest.mark.parametrize("tp", [1, 2])
def test_deepseek_v2_logits_match_transformers(tmp_path, tp, method):
    groups = dict(n_group=4, topk_group=2) if method == "group_limited_greedy" else {}
    model = deepseek(transformers.DeepseekV2Config, **V2, topk_method=method, **groups)
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "deepseek_v2" and cfg["q_lora_rank"] is None
    features = llm.config["features"]
    assert "latent attention (q q_proj, kv_lora_rank 16, qk nope/rope 8/8, v 12, adjacent rope pairs)" in features
    assert ("best 2 of 4 groups (by best expert)" in features) == bool(groups)
    if groups:
        assert changed(model, topk_method="greedy", n_group=None, topk_group=None) > CHANGED
    assert changed(model, routed_scaling_factor=1.0) > CHANGED


def test_deepseek_v2_with_q_lora_and_attention_bias(tmp_path):
    """q_a_proj / q_b_proj in V2, and attention_bias: q_a_proj's, kv_a_proj_with_mqa's and o_proj's biases."""
    model = deepseek(transformers.DeepseekV2Config, **{**V2, "q_lora_rank": 24}, attention_bias=True)
    assert "model.layers.0.self_attn.kv_a_proj_with_mqa.bias" in model.state_dict()
    run_both(model, tmp_path, 2)
    assert changed(model, edit_at("kv_a_proj_with_mqa.bias", torch.zeros_like)) > CHANGED


@pytest.mark.parametrize("key, value, match", [
    ("topk_method", "noaux_tc", "topk_method.*not supported"),  # transformers' V2 fails on it
    ("num_key_value_heads", 2, "num_key_value_heads.*every head"),
    ("n_group", 3, "n_group.*does not divide"),
])
def test_deepseek_v2_what_transformers_would_run_otherwise_is_refused(tmp_path, key, value, match):
    model = deepseek(transformers.DeepseekV2Config, **V2, topk_method="group_limited_greedy", n_group=4, topk_group=2)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, key: value}))
    with pytest.raises(wl.Error, match=match) as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


@pytest.mark.parametrize("cls, sizes, key, value", [
    (transformers.DeepseekV2Config, V2, "norm_topk_prob", True),
    (transformers.DeepseekV2Config, V2, "scoring_func", "sigmoid"),
    (transformers.DeepseekV2Config, V2, "moe_layer_freq", 2),
    (transformers.DeepseekV3Config, V3, "topk_method", "greedy"),
    (transformers.DeepseekV3Config, V3, "scoring_func", "softmax"),
    (transformers.DeepseekV3Config, V3, "moe_layer_freq", 2),
], ids=lambda v: v if isinstance(v, str) else None)
def test_deepseek_fields_transformers_ignores_are_ignored(tmp_path, cls, sizes, key, value):
    """Fields the original DeepSeek code read and transformers 5 does not: it runs the model as
    without them (its own logits from the edited config.json are unchanged), and so does the engine."""
    model = deepseek(cls, **sizes)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, key: value}))
    ids = sequence(19, seed=19)
    want = reference(model, ids)
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32, attn_implementation="eager").eval()
    assert error(reference(again, ids), want) < TOLERANCE
    assert error(engine_logits(wl.LLM(str(tmp_path)), ids), want) < TOLERANCE


def test_a_deepseek_field_on_another_family_is_refused(tmp_path):
    model = build(transformers.LlamaConfig, PLAIN)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "kv_lora_rank": 16}))
    with pytest.raises(wl.Error, match="kv_lora_rank.*DeepSeek field") as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


def test_deepseek_v3_experts_stacked_as_transformers_5_holds_them(tmp_path):
    """The model's own state dict (mlp.experts.gate_up_proj [experts, 2 x units, hidden] and
    down_proj) saved as it is: each expert read from its rows of the stack."""
    from safetensors.torch import save_file
    model = deepseek(transformers.DeepseekV3Config, **V3)
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    assert "model.layers.1.mlp.experts.gate_up_proj" in state
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    llm = wl.LLM(str(tmp_path), tensor_parallel_size=2)
    ids = sequence(7, seed=7)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_inspect_describes_deepseek_and_llama2c_is_refused_by_name(tmp_path):
    """(GGUF output: test_families_gguf.py.)"""
    model = deepseek(transformers.DeepseekV3Config, **V3)
    model.save_pretrained(tmp_path / "m")
    cli = os.environ.get("WL_CLI", "build/weightloader")
    done = subprocess.run([cli, "inspect", str(tmp_path / "m")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "deepseek_v3: " in done.stdout and "latent attention" in done.stdout and "sigmoid scores" in done.stdout
    done = subprocess.run([cli, "convert", str(tmp_path / "m"), str(tmp_path / "m.bin"), "-q"], capture_output=True, text=True)
    assert done.returncode != 0 and "deepseek_v3 cannot be written as llama2.c" in done.stderr, done.stderr


def fp8_blocks(w, block=128):
    """DeepSeek-V3's layout: float8_e4m3fn values and one F32 weight_scale_inv per 128 x 128 block
    (the block's largest magnitude over e4m3's 448); returns them and the weight they decode to."""
    rows, cols = w.shape
    br, bc = -(-rows // block), -(-cols // block)
    scale = torch.empty(br, bc)
    for i in range(br):
        for j in range(bc):
            scale[i, j] = w[i * block:(i + 1) * block, j * block:(j + 1) * block].abs().max() / 448
    full = scale.repeat_interleave(block, 0)[:rows].repeat_interleave(block, 1)[:, :cols]
    q = (w / full).to(torch.float8_e4m3fn)
    return q, scale, q.float() * full


def test_deepseek_v3_fp8_block_weights_load_to_the_same_logits(tmp_path):
    """The released checkpoints' form: every projection F8_E4M3 with 128 x 128 block scales
    (quantization_config fp8, weight_block_size), the norms, router, embedding and head as they
    are. Dequantised on load, the logits are those of transformers running the decoded weights."""
    from safetensors.torch import save_file
    model = deepseek(transformers.DeepseekV3Config, **V3)
    model.save_pretrained(tmp_path)
    stored, decoded = {}, {}
    for k, v in model.state_dict().items():
        if k.endswith("proj.weight") or k.endswith("proj_with_mqa.weight"):
            q, s, w = fp8_blocks(v)
            stored[k], stored[k + "_scale_inv"], decoded[k] = q, s, w
        else:
            stored[k] = decoded[k] = v
    (tmp_path / "model.safetensors").unlink()
    save_file({k: v.contiguous() for k, v in stored.items()}, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model.load_state_dict(decoded)
    for tp in (1, 2):
        llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp)
        for n in (1, 11):
            ids = sequence(n, seed=n)
            assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_deepseek_v3_prediction_layers_are_not_read(tmp_path):
    """The released V3 stores its multi-token prediction module as the layer after the last
    (num_nextn_predict_layers): the engine does not run it, so its tensors are left unread; a
    checkpoint with such a layer its config.json does not announce is refused."""
    from safetensors.torch import load_file, save_file
    model = deepseek(transformers.DeepseekV3Config, **V3)
    model.save_pretrained(tmp_path)
    state = load_file(str(tmp_path / "model.safetensors"))
    last = V3["num_hidden_layers"] - 1
    extra = {k.replace(f"layers.{last}.", f"layers.{last + 1}."): v.clone() for k, v in state.items() if f"layers.{last}." in k}
    extra[f"model.layers.{last + 1}.eh_proj.weight"] = torch.zeros(32, 64)
    save_file({**state, **extra}, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["num_nextn_predict_layers"] == 1
    llm = wl.LLM(str(tmp_path))
    assert "prediction layers not run (1)" in llm.config["features"]
    ids = sequence(7, seed=7)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "num_nextn_predict_layers": 0}))
    with pytest.raises(wl.Error, match="num_hidden_layers") as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"
