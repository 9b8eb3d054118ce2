"""Llama 4's text model through the family seam (src/families/llama4_text.cpp), checked against
transformers 5 itself: tiny random Llama4ForCausalLM models built by the pinned transformers
(from_config, fixed seeds), saved with save_pretrained, logits equal at every position of sequences
longer than the attention chunk, in one process and with two tensor-parallel ranks (heads split,
the stacked experts split inside or whole). The model mixes dense and sparse layers, and layers that
turn (in chunks, q and k L2-normalised) with one that does not (its queries' temperature tuned). Each
part changes transformers' own logits measurably, so a part the engine ignored would fail here."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import CHANGED, TOLERANCE, build, engine_logits, error, reference, sequence, run_both  # noqa: E402

# 4 layers: 1 and 3 sparse (4 experts of 16 units, top-1, a shared expert of 16), 0 and 2 dense (24
# units); layer 2 does not turn (no_rope_layer_interval 3), the others turn in chunks of 5 with q/k
# L2-normalised; the temperature tuned from position 3 (floor_scale 4) strongly enough to show.
SIZES = dict(num_hidden_layers=4, hidden_size=32, intermediate_size=16, intermediate_size_mlp=24, head_dim=8,
             num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2, no_rope_layer_interval=3,
             attention_chunk_size=5, floor_scale=4, attn_scale=0.5)
ROPE = {"rope_type": "default", "rope_theta": 500000.0}
# Frequencies that turn within the sequences (500000 barely turns over 19 positions).
FAST = {"rope_type": "default", "rope_theta": 100.0}


def llama4(rope=FAST, **sizes):
    return build(transformers.Llama4TextConfig, rope, **{**SIZES, **sizes})


def changed(model, edit=None, rope=FAST, **config):
    """transformers' logits of `model`'s weights, edited, or under other config values, against its own."""
    other = llama4(rope, **{**model.sizes, **config})
    state = model.state_dict()
    other.load_state_dict({k: edit(k, v) if edit else v for k, v in state.items()})
    ids = sequence(19, seed=19)
    return error(reference(other, ids), reference(model, ids))


def cli(*args):
    return subprocess.run([os.environ.get("WL_CLI", "build/weightloader"), *args], capture_output=True, text=True)


@pytest.mark.parametrize("tp", [1, 2])
def test_llama4_logits_match_transformers(tmp_path, tp):
    model = llama4()
    llm, cfg = run_both(model, tmp_path, tp)
    assert cfg["model_type"] == "llama4_text" and cfg["moe_layers"] == [1, 3] and cfg["no_rope_layers"] == [1, 1, 0, 1]
    assert cfg["layer_types"] == ["chunked_attention", "chunked_attention", "full_attention", "chunked_attention"]
    features = llm.config["features"]
    for part in ("rope in adjacent pairs", "1 of 4 layers without rope", "q/k L2 norm after rope", "chunked attention 5 (3 of 4 layers)",
                 "attention temperature tuning on layers without rope (floor_scale 4, attn_scale 0.5)",
                 "4 experts, top-1, sigmoid scores, shared experts of 16 units, stacked experts, weights on the experts' inputs, 2 of 4 layers sparse"):
        assert part in features, features


def test_llama4_top2_all_layers_sparse_and_expert_parallel(tmp_path):
    """Two experts chosen (each input scaled by its own sigmoid), every layer sparse, and two ranks
    each holding 2 whole experts (enable_expert_parallel)."""
    model = llama4(num_experts_per_tok=2, interleave_moe_layer_step=1)
    run_both(model, tmp_path, 2, enable_expert_parallel=True)
    assert changed(model, num_experts_per_tok=1) > CHANGED


def test_llama4_tp4_shares_kv_heads(tmp_path):
    """Four ranks over 2 kv heads: each rank one query head, a kv head shared by two, 4 units of each expert."""
    run_both(llama4(), tmp_path, 4, lengths=(7, 13))


def test_llama4_parts_change_transformers_logits():
    """What the engine follows is not decoration: each part moves transformers' own logits."""
    model = llama4()
    assert changed(model, attention_chunk_size=64) > CHANGED
    assert changed(model, use_qk_norm=False) > CHANGED
    assert changed(model, attn_temperature_tuning=False) > CHANGED
    # every layer turning, the chunks as they were
    assert changed(model, no_rope_layers=[1, 1, 1, 1], layer_types=model.config.layer_types) > CHANGED
    assert changed(model, rope={"rope_type": "default", "rope_theta": 1e30}) > CHANGED  # nothing turning
    # gate and up read the other way round
    swap = lambda k, v: torch.cat([v[..., v.shape[-1] // 2:], v[..., :v.shape[-1] // 2]], dim=-1) if k.endswith("gate_up_proj") else v  # noqa: E731
    assert changed(model, swap) > CHANGED
    # the shared expert
    assert changed(model, lambda k, v: torch.zeros_like(v) if "shared_expert.down_proj" in k else v) > CHANGED


def test_llama4_rope_pairs_and_input_weights_change_transformers_logits(monkeypatch):
    """Two parts no config field turns off: rope's pairs adjacent (halves instead move the logits)
    and the router's weights scaling the experts' inputs (scaling their outputs instead moves them)."""
    from transformers.models.llama4 import modeling_llama4
    model = llama4()
    ids = sequence(19, seed=19)
    want = reference(model, ids)

    def halves(xq, xk, freqs_cis):
        cos, sin = freqs_cis.real[:, :, None, :], freqs_cis.imag[:, :, None, :]

        def turn(x):
            a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)
        return turn(xq), turn(xk)

    with monkeypatch.context() as m:
        m.setattr(modeling_llama4, "apply_rotary_emb", halves)
        assert error(reference(model, ids), want) > CHANGED

    def weighted_outputs(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        scores, logits = self.router(hidden_states)
        routed = self.experts(hidden_states.repeat(scores.shape[1], 1))
        routed = routed * scores.transpose(0, 1).reshape(-1, 1)
        out = self.shared_expert(hidden_states)
        out.add_(routed.reshape(scores.shape[1], -1, routed.shape[-1]).sum(dim=0))
        return out, logits

    with monkeypatch.context() as m:
        m.setattr(modeling_llama4.Llama4TextMoe, "forward", weighted_outputs)
        assert error(reference(model, ids), want) > CHANGED


# Llama 4 Scout's rope scaling: llama3 with low_freq_factor = high_freq_factor (no band between; transformers
# only warns), here over a 16-position original context so that it divides 3 of the 4 frequencies.
SCOUT_ROPE = {"rope_type": "llama3", "rope_theta": 100.0, "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
              "original_max_position_embeddings": 16}


@pytest.mark.parametrize("tp", [1, 2])
def test_llama4_llama3_scaling_with_equal_factors(tmp_path, tp):
    model = llama4(SCOUT_ROPE)
    llm, _ = run_both(model, tmp_path, tp)
    assert "rope scaling llama3 x16" in llm.config["features"]
    assert changed(model, rope=FAST) > CHANGED


def test_llama4_defaults_of_its_own(tmp_path):
    """A config.json without rope_theta, rms_norm_eps, the chunk's and the temperature's settings:
    Llama 4's defaults (500000, 1e-5, chunks of 8192, floor_scale 8192 and attn_scale 0.1), not the
    other families'."""
    model = llama4(ROPE, attention_chunk_size=8192, floor_scale=8192, attn_scale=0.1, rms_norm_eps=1e-5)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    for key in ("attention_chunk_size", "floor_scale", "attn_scale", "rms_norm_eps", "use_qk_norm", "attn_temperature_tuning"):
        del cfg[key]
    del cfg["rope_parameters"]["rope_theta"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    llm = wl.LLM(str(tmp_path))
    features = llm.config["features"]
    assert "chunked attention 8192" in features and "floor_scale 8192, attn_scale 0.1" in features and "q/k L2 norm" in features
    ids = sequence(7, seed=7)
    assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_llama4_layer_types_and_moe_layers_as_listed(tmp_path):
    """layer_types and moe_layers as config.json lists them, not as the intervals would give them."""
    model = llama4(layer_types=["full_attention", "chunked_attention", "chunked_attention", "full_attention"], moe_layers=[0, 2])
    llm, cfg = run_both(model, tmp_path, 1)
    assert cfg["moe_layers"] == [0, 2]
    assert "chunked attention 5 (2 of 4 layers)" in llm.config["features"]
    assert changed(model, layer_types=["chunked_attention"] * 4) > CHANGED


def write_config(folder, model, **edits):
    model.save_pretrained(folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(edits)
    (folder / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("edits, field", [
    (dict(attention_chunk_size=None), "attention_chunk_size"),
    (dict(layer_types=["sliding_attention"] * 4), r"layer_types\[0\]"),
    (dict(no_rope_layers=[1, 0]), "no_rope_layers"),
    (dict(sliding_window=4), "sliding_window"),
])
def test_llama4_config_it_cannot_run_is_refused_by_name(tmp_path, edits, field):
    write_config(tmp_path, llama4(), **edits)
    with pytest.raises(wl.Error, match=field) as e:
        wl.LLM(str(tmp_path))
    assert e.value.code == "ConfigInvalid"


def test_llama4_fields_in_another_family_are_refused(tmp_path):
    model = build(transformers.LlamaConfig, ROPE, head_dim=8)
    write_config(tmp_path, model, attention_chunk_size=4)
    with pytest.raises(wl.Error, match="attention_chunk_size.*Llama 4 field"):
        wl.LLM(str(tmp_path))


def test_inspect_describes_llama4_and_gguf_llama_cpp_runs_otherwise_is_refused_by_name(tmp_path):
    """These models' NoPE layer every 3rd is not llama.cpp's every 4th (test_families_gguf.py writes
    those it runs)."""
    llama4().save_pretrained(tmp_path / "m")
    done = cli("inspect", str(tmp_path / "m"))
    assert done.returncode == 0, done.stderr
    assert "llama4_text: " in done.stdout and "chunked attention" in done.stdout and "stacked experts" in done.stdout, done.stdout
    done = cli("convert", str(tmp_path / "m"), str(tmp_path / "m.gguf"), "-q")
    assert done.returncode != 0 and "layers without rope layers [3] instead of layers [2]" in done.stderr, done.stderr
    assert not (tmp_path / "m.gguf").exists()
