"""config.json as transformers 5 writes it: the rotary settings under rope_parameters (flat, or per
layer type), not rope_theta and rope_scaling. Tiny random models built and saved by the pinned
transformers itself; the engine's logits at every position equal transformers' (float32, eager
attention), and each setting changes them measurably, so a setting read wrongly or ignored (the
engine once ran rope_parameters' rope_theta 1e6 as 10000) fails here. What the engine cannot run is
refused by name."""
import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402

TOLERANCE = 1e-5  # largest logit error, relative to the row's scale (observed: up to 2e-6)
CHANGED = 1e-2    # what ignoring a setting must change by, at least
SIZES = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0)
PLAIN = {"rope_type": "default", "rope_theta": 10000.0}  # what a reader ignoring rope_parameters runs


def sequence(n, seed=0):
    return torch.randint(3, SIZES["vocab_size"], (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def build(cls, rope_parameters, seed=1234, **overrides):
    """A model of transformers' class for `cls` (a config class) with weights large enough that the
    rotary angles move the logits (the default 0.02 initialisation barely lets them), drawn from `seed`."""
    config = cls(**{**SIZES, **overrides, "rope_parameters": copy.deepcopy(rope_parameters)})
    config._attn_implementation = "eager"
    model = scaled(transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval(), seed)
    model.sizes = overrides
    return model


def scaled(model, seed=1234):
    """`model` with random weights large enough to move the logits: norms near 1, matrices of unit gain."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() == 0:  # a part configured away (a shared expert of no units)
                continue
            if "norm" in name:
                p.copy_(0.75 + 0.5 * torch.rand(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() == 1 else p.shape[-1] ** -0.5))
    return model


def reference(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].double().numpy()


def like(model, rope_parameters, **overrides):
    """The same weights under other rotary settings."""
    other = build(type(model.config), rope_parameters, **{**model.sizes, **overrides})
    other.load_state_dict(model.state_dict())
    return other


def error(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    scale = np.maximum(np.abs(want).max(axis=1), 1.0)
    return float((np.abs(got - want).max(axis=1) / scale).max())


def engine_logits(llm, ids):
    out = llm.generate(ids, wl.SamplingParams(temperature=0, max_tokens=1), return_logits=True)[0]
    return np.array(out.logits)


def refused_after(folder, edit, match):
    """config.json in `folder` changed by `edit(cfg)`: the engine refuses it, ConfigInvalid matching `match`."""
    cfg = json.loads((folder / "config.json").read_text())
    edit(cfg)
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(wl.Error, match=match) as e:
        wl.LLM(str(folder))
    assert e.value.code == "ConfigInvalid"


def changed_logits(model, other, edit=None):
    """How far transformers' logits of `other` (another model: other config values), given `model`'s
    weights through `edit(name, tensor)`, are from `model`'s own: a control's measure."""
    state = model.state_dict()
    other.load_state_dict({k: edit(k, v) if edit else v for k, v in state.items()})
    ids = sequence(19, seed=19)
    return error(reference(other, ids), reference(model, ids))


def edit_at(suffix, f):
    """An edit for changed_logits: f(tensor) for the names ending in `suffix`, the others as they are."""
    return lambda k, v: f(v) if k.endswith(suffix) else v


def run_both(model, folder, tp=1, lengths=(1, 7, 19), **kwargs):
    """`model` saved by transformers into `folder`, run by the engine (`tp` ranks, LLM's kwargs): its
    logits equal transformers' at every position of sequences of `lengths`. Returns (LLM, config.json)."""
    model.save_pretrained(folder)
    cfg = json.loads((folder / "config.json").read_text())
    llm = wl.LLM(str(folder), tensor_parallel_size=tp, **kwargs)
    assert llm.config["architecture"] == cfg["model_type"]
    worst = 0.0
    for n in lengths:
        ids = sequence(n, seed=n)
        worst = max(worst, error(engine_logits(llm, ids), reference(model, ids)))
    assert worst < TOLERANCE, worst
    return llm, cfg


def save(model, folder):
    """save_pretrained as transformers 5 writes it (safetensors, F32); returns config.json."""
    from safetensors.torch import load_file

    model.save_pretrained(folder)
    assert {t.dtype for t in load_file(str(folder / "model.safetensors")).values()} == {torch.float32}
    cfg = json.loads((folder / "config.json").read_text())
    assert isinstance(cfg.get("rope_parameters"), dict), cfg
    assert "rope_theta" not in cfg and "rope_scaling" not in cfg, cfg  # transformers 5 writes neither
    return cfg


def check(model, folder, lengths, plain=PLAIN):
    """Saved into `folder`, the engine's logits equal transformers' for a sequence of each length;
    with `plain` rotary settings instead, transformers' own logits of the longest differ. Returns the
    largest error, for the report."""
    cfg = save(model, folder)
    llm = wl.LLM(str(folder))
    assert llm.config["architecture"] == cfg["model_type"]
    worst = 0.0
    for n in lengths:
        ids = sequence(n, seed=n)
        want = reference(model, ids)
        got = engine_logits(llm, ids)
        worst = max(worst, error(got, want))
        assert worst < TOLERANCE, (n, worst)
    ids = sequence(max(lengths), seed=max(lengths))
    assert error(reference(like(model, plain), ids), reference(model, ids)) > CHANGED
    return worst


def test_qwen2_reads_rope_theta_from_rope_parameters(tmp_path):
    """The issue's case: Qwen2 with rope_theta 1e6, which transformers 5 writes only inside
    rope_parameters; run with 10000 the logits differ."""
    model = build(transformers.Qwen2Config, {"rope_type": "default", "rope_theta": 1e6})
    assert check(model, tmp_path, [5, 24]) < TOLERANCE
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["rope_parameters"] == {"rope_type": "default", "rope_theta": 1e6}


MOE = dict(num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16)


@pytest.mark.parametrize("cls, sizes", [
    (transformers.MistralConfig, dict(head_dim=8)),
    (transformers.MixtralConfig, dict(num_local_experts=4, num_experts_per_tok=2)),
    (transformers.Qwen2MoeConfig, dict(MOE, num_experts=4)),
], ids=["mistral", "mixtral", "qwen2_moe"])
def test_other_families_read_rope_theta_from_rope_parameters(tmp_path, cls, sizes):
    model = build(cls, {"rope_type": "default", "rope_theta": 1e6}, **sizes)
    assert check(model, tmp_path, [24]) < TOLERANCE


@pytest.mark.parametrize("rope", [
    # Llama 3.1's: with head_dim 8 and a pretrained context of 64, frequency 0 keeps its wavelength,
    # 1 blends the two and 2, 3 slow down by the factor.
    {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 64},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    # NTK-aware: a larger base once the sequence outgrows max_position_embeddings (16).
    {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0},
], ids=lambda r: r["rope_type"])
def test_llama_scalings_in_rope_parameters(tmp_path, rope):
    sizes = dict(max_position_embeddings=16 if rope["rope_type"] == "dynamic" else 128)
    model = build(transformers.LlamaConfig, rope, **sizes)
    assert check(model, tmp_path, [7, 24]) < TOLERANCE
    assert json.loads((tmp_path / "config.json").read_text())["rope_parameters"]["rope_type"] == rope["rope_type"]


def test_llama3_rope_theta_is_read_beside_the_scaling(tmp_path):
    """llama3 scaling with the plain theta 10000 is not llama3 scaling with 5e5."""
    rope = {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64}
    model = build(transformers.LlamaConfig, rope, max_position_embeddings=128)
    assert check(model, tmp_path, [24], plain={**rope, "rope_theta": 10000.0}) < TOLERANCE


def test_phi3_longrope_with_partial_rotary_factor(tmp_path):
    """Phi-3's longrope inside rope_parameters with partial_rotary_factor 0.5 (8 of 16 dimensions
    turn): a sequence within the pretrained context (16) turns with the short factors, a longer one
    with the long factors at every position, and both with longrope's attention factor sqrt(1 + ln 4 /
    ln 16) (max_position_embeddings 64 over 16)."""
    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
            "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 4.0, 16.0, 64.0]}
    model = build(transformers.Phi3Config, rope, hidden_size=64, original_max_position_embeddings=16)
    assert check(model, tmp_path, [9, 16, 24]) < TOLERANCE
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["rope_parameters"]["partial_rotary_factor"] == 0.5 and "partial_rotary_factor" not in cfg
    assert cfg["rope_parameters"]["original_max_position_embeddings"] == 16
    # The short factors alone, or the long ones alone, are not what transformers runs on each side.
    ids = sequence(24, seed=24)
    short_only = like(model, {**rope, "long_factor": rope["short_factor"]})
    assert error(reference(short_only, ids), reference(model, ids)) > CHANGED
    ids = sequence(9, seed=9)
    long_only = like(model, {**rope, "short_factor": rope["long_factor"]})
    assert error(reference(long_only, ids), reference(model, ids)) > CHANGED


def test_phi3_partial_rotary_factor_inside_rope_parameters_is_read(tmp_path):
    """Partial rotary given only inside rope_parameters (default rope): the whole head turning instead differs."""
    rope = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    model = build(transformers.Phi3Config, rope, hidden_size=64)
    assert check(model, tmp_path, [24], plain={"rope_type": "default", "rope_theta": 10000.0}) < TOLERANCE
    assert "partial rotary (8 of 16)" in wl.LLM(str(tmp_path)).config["features"]


GEMMA2 = dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=6)


def test_gemma2_reads_rope_theta_from_rope_parameters(tmp_path):
    """Transformers 5's Gemma 2 takes one flat rope_parameters for both layer types (layer 0 slides
    within 6 positions, layer 1 attends to all)."""
    model = build(transformers.Gemma2Config, {"rope_type": "default", "rope_theta": 1e6}, **GEMMA2)
    assert model.config.layer_types == ["sliding_attention", "full_attention"]
    assert check(model, tmp_path, [24]) < TOLERANCE


def test_gemma2_with_rope_parameters_per_layer_type(tmp_path):
    """Rotary settings per layer type ({"full_attention": ..., "sliding_attention": ...}), which
    transformers 5.19 runs for Gemma 3 but not Gemma 2 (its Gemma2RotaryEmbedding reads one flat
    dict). The reference is transformers' Gemma 2 with Gemma 3's rule: each layer turns with its
    type's frequencies, the sliding layer's from a second Gemma2RotaryEmbedding."""
    full, sliding = {"rope_type": "default", "rope_theta": 1e6}, {"rope_type": "linear", "rope_theta": 100.0, "factor": 2.0}
    model = build(transformers.Gemma2Config, full, **GEMMA2)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["rope_parameters"] = {"full_attention": full, "sliding_attention": sliding}
    (tmp_path / "config.json").write_text(json.dumps(cfg))

    other = build(transformers.Gemma2Config, sliding, **GEMMA2)
    rotary = type(model.model.rotary_emb)(config=other.config)

    def sliding_rotary(layer, args, kwargs):
        kwargs["position_embeddings"] = rotary(args[0] if args else kwargs["hidden_states"], kwargs["position_ids"])
        return args, kwargs

    for layer, kind in zip(model.model.layers, model.config.layer_types):
        if kind == "sliding_attention":
            layer.register_forward_pre_hook(sliding_rotary, with_kwargs=True)
    llm = wl.LLM(str(tmp_path))
    assert "sliding layers' rope theta 100" in llm.config["features"]
    ids = sequence(24, seed=3)
    want = reference(model, ids)
    assert error(engine_logits(llm, ids), want) < TOLERANCE
    # Both layer types' settings matter: either one for every layer is another model.
    for every in (full, sliding):
        assert error(reference(like(model, every), ids), want) > CHANGED


def test_qwen2_sliding_layers_as_layer_types_names_them(tmp_path):
    """Transformers 5 writes which layers slide as layer_types (Qwen2: from max_window_layers on),
    and its Qwen2 attends as the list says; the engine's rule picks the same layers."""
    model = build(transformers.Qwen2Config, {"rope_type": "default", "rope_theta": 1e6},
                  use_sliding_window=True, sliding_window=6, max_window_layers=1)
    assert check(model, tmp_path, [24]) < TOLERANCE
    assert json.loads((tmp_path / "config.json").read_text())["layer_types"] == ["full_attention", "sliding_attention"]
    assert "sliding window 6 (from layer 1)" in wl.LLM(str(tmp_path)).config["features"]


@pytest.mark.parametrize("cls, sizes, rule", [
    # Gemma 2 with the layer types swapped: layer 0 attends to all, layer 1 slides.
    (transformers.Gemma2Config, dict(GEMMA2, layer_types=["full_attention", "sliding_attention"]),
     ["sliding_attention", "full_attention"]),
    # Transformers 5's own default for Qwen2-MoE: the even layers below max_window_layers slide, where
    # transformers 4 slid those from max_window_layers on.
    (transformers.Qwen2MoeConfig, dict(MOE, num_experts=4, use_sliding_window=True, sliding_window=6, max_window_layers=1),
     ["full_attention", "sliding_attention"]),
], ids=["gemma2 swapped", "qwen2_moe"])
def test_layer_types_other_than_the_familys_rule_slide_as_listed(tmp_path, cls, sizes, rule):
    """The layers layer_types names slide, not those of the family's rule (which would attend otherwise)."""
    rope = {"rope_type": "default", "rope_theta": 1e6}
    model = build(cls, rope, **sizes)
    assert model.config.layer_types != rule
    assert check(model, tmp_path, [24]) < TOLERANCE
    assert "(1 of 2 layers, as listed)" in wl.LLM(str(tmp_path)).config["features"]
    by_rule = like(model, rope, layer_types=rule)
    ids = sequence(24, seed=24)
    assert error(reference(by_rule, ids), reference(model, ids)) > CHANGED


def test_a_family_the_engine_does_not_run_is_refused_by_name(tmp_path):
    """Cohere (not run: LayerNorm with no bias, attention and MLP in parallel, logit_scale) is refused
    by its model_type and by its architecture, never run as something else."""
    config = transformers.CohereConfig(**SIZES, rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    with pytest.raises(wl.Error, match="cohere.* not a family the engine runs") as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"
    del cfg["model_type"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(wl.Error, match="CohereForCausalLM.* not one the engine runs"):
        wl.LLM(str(tmp_path))


def saved_llama(folder, rope):
    model = build(transformers.LlamaConfig, {"rope_type": "default", "rope_theta": 1e6})
    cfg = save(model, folder)
    cfg["rope_parameters"] = rope
    (folder / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("rope, match", [
    # A rope type the engine does not implement is refused naming it, not run as the default.
    ({"rope_type": "proportional", "rope_theta": 1e6}, r"rope_parameters.*'proportional' is not supported"),
    ({"rope_type": "made_up", "rope_theta": 1e6, "factor": 2.0}, r"rope_parameters.*'made_up' is not supported"),
    # A key the engine does not read would change the frequencies silently.
    ({"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0, "ramp_sharpness": 2.0}, r"rope_parameters\.ramp_sharpness.*not a yarn setting"),
    ({"rope_type": "linear", "rope_theta": 1e6, "factor": 2.0, "low_freq_factor": 1.0}, r"rope_parameters\.low_freq_factor.*not a linear setting"),
    ({"full_attention": {"rope_type": "default", "rope_theta": 1e6}, "global": {"rope_type": "default"}},
     r"rope_parameters\.global.*not a layer type"),
], ids=["proportional", "made-up type", "unknown yarn key", "unknown linear key", "unknown layer type"])
def test_rope_parameters_the_engine_cannot_follow_are_refused_by_name(tmp_path, rope, match):
    saved_llama(tmp_path, rope)
    with pytest.raises(wl.Error, match=match) as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"
