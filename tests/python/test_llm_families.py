"""Python's LLM over families beyond Llama: logits at every position equal those transformers
computed (../shared/testdata/hf-tiny-arch), in one process and with two tensor-parallel ranks."""
import json
import os
import subprocess

import numpy as np
import pytest
import torch

import weightloader as wl
from moe_layouts import qwen2_moe_from_mixtral, transformers5_layout

CLI = os.environ.get("WL_CLI", "build/weightloader")


def worst_error(llm, folder):
    """The largest logit error over every position of every sequence, relative to the row's scale."""
    ref = json.loads((folder / "reference_logits.json").read_text())
    worst = 0.0
    for ids, want in zip(ref["sequences"], ref["logits"]):
        out = llm.generate(ids, wl.SamplingParams(temperature=0, max_tokens=1), return_logits=True)[0]
        got, want = np.array(out.logits), np.array(want)
        assert got.shape == want.shape
        scale = np.maximum(np.abs(want).max(axis=1), 1.0)
        worst = max(worst, float((np.abs(got - want).max(axis=1) / scale).max()))
    return worst


@pytest.mark.parametrize("family", ["gemma2", "phi3", "mixtral"])
@pytest.mark.parametrize("tp", [1, 2])
def test_logits_match_transformers(testdata, family, tp):
    folder = testdata / "hf-tiny-arch" / family
    llm = wl.LLM(str(folder), tensor_parallel_size=tp)
    assert llm.config["architecture"] == family
    assert worst_error(llm, folder) < 1e-5


def test_stop_tokens_come_from_the_config(testdata):
    # phi3's config.json names eos_token_id 2; the others name none, so nothing stops them early.
    assert wl.LLM(str(testdata / "hf-tiny-arch" / "phi3")).stop_token_ids == [2]
    assert wl.LLM(str(testdata / "hf-tiny-arch" / "qwen2")).stop_token_ids == []


def qwen2_moe_dir(testdata, folder, **kwargs):
    """moe_layouts.qwen2_moe_from_mixtral written into `folder`, with Mixtral's reference logits."""
    from weightloader.safetensors.torch import load_file, save_file

    mixtral = testdata / "hf-tiny-arch" / "mixtral"
    tensors, cfg = qwen2_moe_from_mixtral(load_file(str(mixtral / "model.safetensors")),
                                          json.loads((mixtral / "config.json").read_text()), **kwargs)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "reference_logits.json").write_text((mixtral / "reference_logits.json").read_text())
    return folder


def test_qwen2_moe_routes_as_mixtral_does(testdata, tmp_path):
    """Mixtral's checkpoint under Qwen2-MoE's names and config (renormalised top-2, q/k/v biases of
    zero, a shared expert whose output is zero) gives Mixtral's reference logits."""
    qwen2_moe_dir(testdata, tmp_path)
    for tp in (1, 2):
        llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp)
        assert "gated shared expert" in llm.config["features"]
        assert worst_error(llm, tmp_path) < 1e-5


def all_logits(model, sequences):
    llm = wl.LLM(str(model))
    return [np.array(llm.generate(ids, wl.SamplingParams(temperature=0, max_tokens=1), return_logits=True)[0].logits)
            for ids in sequences]


def test_qwen2_moe_converts_to_gguf_as_llama_cpp_runs_it(testdata, tmp_path):
    """As llama.cpp's qwen2moe: ffn_*_exps stacks, the shared expert's tensors and gate, its expert
    sizes in the keys; read back, the same logits at every position. llama.cpp never renormalises
    the top-k weights, so a model that does is refused by name (scripts/llama-cpp-check.sh runs the
    conversion in llama.cpp itself)."""
    src = qwen2_moe_dir(testdata, tmp_path, norm_topk_prob=False, shared_seed=7)
    out = tmp_path / "q.gguf"
    subprocess.run([CLI, "convert", str(src), str(out), "--gguf-type", "f32", "-q"], check=True)
    sequences = json.loads((src / "reference_logits.json").read_text())["sequences"]
    for want, got in zip(all_logits(src, sequences), all_logits(out, sequences)):
        assert np.abs(want - got).max() <= 1e-5 * max(1.0, np.abs(want).max())
    (tmp_path / "r").mkdir()
    renormalised = qwen2_moe_dir(testdata, tmp_path / "r")
    r = subprocess.run([CLI, "convert", str(renormalised), str(tmp_path / "r.gguf"), "-q"], capture_output=True, text=True)
    assert r.returncode != 0 and "renormalised" in r.stderr, r.stderr
    assert not (tmp_path / "r.gguf").exists()


class StateDictLoader(wl.BaseWeightLoader):
    """The seed's way: the checkpoint's tensors by name, then module.load_state_dict."""

    def get_weights(self, path):
        w = wl.LocalWeightLoader().get_weights(path + "/model.safetensors")
        return {k: w[k] for k in w}

    def load_weights(self, model, weights):
        missing, unexpected = model.load_state_dict(weights, strict=False)
        assert missing == []


@pytest.mark.parametrize("tp", [1, 2])
def test_a_python_loader_fills_phi3s_fused_tensors(testdata, tp):
    """Phi-3's qkv_proj and gate_up_proj are fused in the checkpoint as in the engine: the module
    presents each under its checkpoint name, and load_state_dict fills this rank's rows of each part."""
    folder = testdata / "hf-tiny-arch" / "phi3"
    llm = wl.LLM(str(folder), weight_loader=StateDictLoader, tensor_parallel_size=tp)
    assert "model.layers.0.self_attn.qkv_proj.weight" in llm.modules[0].state_dict()
    assert worst_error(llm, folder) < 1e-5


@pytest.mark.parametrize("tp", [1, 2])
def test_transformers5_stacked_experts_give_the_per_expert_logits(testdata, tmp_path, tp):
    """Mixtral's checkpoint with its experts stacked as transformers 5 writes them loads as the
    per-expert one: the same reference logits, each rank reading its rows of each expert in place."""
    from weightloader.safetensors.torch import load_file, save_file

    mixtral = testdata / "hf-tiny-arch" / "mixtral"
    cfg = json.loads((mixtral / "config.json").read_text())
    stacked = transformers5_layout(load_file(str(mixtral / "model.safetensors")), cfg["num_local_experts"])
    assert "model.layers.0.mlp.experts.gate_up_proj" in stacked and "model.layers.0.mlp.gate.weight" in stacked
    save_file(stacked, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text((mixtral / "config.json").read_text())
    (tmp_path / "reference_logits.json").write_text((mixtral / "reference_logits.json").read_text())
    llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp)
    assert worst_error(llm, tmp_path) < 1e-5
    # Each rank reads its share of the stacks: together, the file's expert bytes once.
    expert_bytes = sum(t.numel() * 4 for n, t in stacked.items() if ".experts." in n)
    assert sum(r.bytes_read for r in llm.load_reports()) <= 1.05 * (tmp_path / "model.safetensors").stat().st_size
    assert sum(r.bytes_read for r in llm.load_reports()) >= expert_bytes


def test_a_stack_that_is_not_three_dimensional_is_refused_by_name(testdata, tmp_path):
    import torch
    from weightloader.safetensors.torch import save_file

    save_file({"model.layers.0.mlp.experts.down_proj": torch.zeros(4, 8)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mixtral"}))
    with pytest.raises(wl.Error) as e:
        wl.LocalWeightLoader().get_weights(str(tmp_path))
    assert e.value.code == "UnsupportedLayout" and e.value.tensor == "model.layers.0.mlp.experts.down_proj"
    assert "[experts, rows, columns]" in str(e.value)


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("layout", ["per expert", "transformers 5"])
def test_vllm_fused_moe_parameters_fill_from_per_expert_tensors(testdata, tmp_path, tp, layout):
    """A module holding a layer's experts as vLLM's FusedMoE does (experts.w13_weight [experts, 2 ff,
    hidden]: gate rows then up rows; experts.w2_weight [experts, hidden, ff]) fills from Mixtral's
    per-expert tensors, or from them stacked as transformers 5 writes them, each rank with vLLM's
    shards: its rows of gate and of up, its columns of down."""
    import torch
    from named_module import Named
    from weightloader.safetensors.torch import load_file, save_file

    mixtral = testdata / "hf-tiny-arch" / "mixtral"
    cfg = json.loads((mixtral / "config.json").read_text())
    stored = load_file(str(mixtral / "model.safetensors"))
    folder = mixtral
    if layout == "transformers 5":
        save_file(transformers5_layout(stored, cfg["num_local_experts"]), str(tmp_path / "model.safetensors"))
        (tmp_path / "config.json").write_text((mixtral / "config.json").read_text())
        folder = tmp_path
    experts, ff, hidden = cfg["num_local_experts"], cfg["intermediate_size"], cfg["hidden_size"]
    part = ff // tp
    for rank in range(tp):
        shapes = {}
        for layer in range(cfg["num_hidden_layers"]):
            at = f"model.layers.{layer}.block_sparse_moe.experts."
            shapes[at + "w13_weight"] = (experts, 2 * part, hidden)
            shapes[at + "w2_weight"] = (experts, hidden, part)
        module = Named(shapes, fill=float("nan"))
        got = wl.load_into(module, str(folder), tp_rank=rank, tp_size=tp, strict=False)
        assert got.missing_keys == []
        rows = slice(rank * part, (rank + 1) * part)
        for layer in range(cfg["num_hidden_layers"]):
            at = f"model.layers.{layer}.block_sparse_moe.experts."
            want13 = torch.stack([torch.cat([stored[f"{at}{e}.w1.weight"][rows], stored[f"{at}{e}.w3.weight"][rows]])
                                  for e in range(experts)])
            want2 = torch.stack([stored[f"{at}{e}.w2.weight"][:, rows] for e in range(experts)])
            assert torch.equal(module.get_parameter(at + "w13_weight"), want13)
            assert torch.equal(module.get_parameter(at + "w2_weight"), want2)


def test_expert_parallel_ranks_fill_only_their_experts(testdata):
    """FusedMoE parameters holding experts / tp_size whole experts (vLLM's expert parallelism): rank r
    fills block r of the experts and reads only those experts' bytes."""
    import torch
    from named_module import Named
    from weightloader.safetensors.torch import load_file

    mixtral = testdata / "hf-tiny-arch" / "mixtral"
    cfg = json.loads((mixtral / "config.json").read_text())
    experts, ff, hidden, layers = cfg["num_local_experts"], cfg["intermediate_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    stored = load_file(str(mixtral / "model.safetensors"))
    local = experts // 2
    for rank in range(2):
        shapes = {}
        for layer in range(layers):
            at = f"model.layers.{layer}.block_sparse_moe.experts."
            shapes[at + "w13_weight"], shapes[at + "w2_weight"] = (local, 2 * ff, hidden), (local, hidden, ff)
        module = Named(shapes, fill=float("nan"))
        got = wl.load_into(module, str(mixtral), tp_rank=rank, tp_size=2, strict=False)
        assert got.missing_keys == []
        mine = range(rank * local, (rank + 1) * local)
        for layer in range(layers):
            at = f"model.layers.{layer}.block_sparse_moe.experts."
            want13 = torch.stack([torch.cat([stored[f"{at}{e}.w1.weight"], stored[f"{at}{e}.w3.weight"]]) for e in mine])
            assert torch.equal(module.get_parameter(at + "w13_weight"), want13)
            assert torch.equal(module.get_parameter(at + "w2_weight"), torch.stack([stored[f"{at}{e}.w2.weight"] for e in mine]))
        assert got._report["bytes_read"] == sum(p.numel() * 4 for p in module.parameters())  # only this rank's experts


def test_expert_parallel_engine_gives_the_reference_logits_and_reads_each_expert_once(testdata):
    """enable_expert_parallel: 2 ranks hold 2 of Mixtral's 4 experts each, whole; the logits are the
    reference's, and each expert's bytes are read by one rank only."""
    folder = testdata / "hf-tiny-arch" / "mixtral"
    llm = wl.LLM(str(folder), tensor_parallel_size=2, enable_expert_parallel=True)
    assert worst_error(llm, folder) < 1e-5
    tp = wl.LLM(str(folder), tensor_parallel_size=2)
    ep_bytes = [r.bytes_read for r in llm.load_reports()]
    tp_bytes = [r.bytes_read for r in tp.load_reports()]
    assert sum(ep_bytes) == sum(tp_bytes)  # every byte once, either way
    cfg = json.loads((folder / "config.json").read_text())
    expert = 3 * cfg["intermediate_size"] * cfg["hidden_size"] * 4  # w1, w3, w2 in F32
    # Rank 0 holds experts 0 and 1 of every layer, whole, and reads them: none of 2 and 3.
    names = [p[0] for p in llm._core.rank_parameters(0)]
    assert any(".experts.1." in n for n in names) and not any(".experts.2." in n or ".experts.3." in n for n in names)
    assert ep_bytes[0] >= 2 * expert * cfg["num_hidden_layers"]


def test_a_transformers5_module_fills_from_the_per_expert_checkpoint(testdata):
    """The other direction: a module holding experts as transformers 5 does (mlp.experts.gate_up_proj,
    mlp.experts.down_proj, the router as mlp.gate) fills from Mixtral's per-expert checkpoint
    (block_sparse_moe.experts.E.w1/w3/w2 and block_sparse_moe.gate), exactly as restacking it gives."""
    from named_module import Named
    from weightloader.safetensors.torch import load_file

    mixtral = testdata / "hf-tiny-arch" / "mixtral"
    cfg = json.loads((mixtral / "config.json").read_text())
    want = {n: t for n, t in transformers5_layout(load_file(str(mixtral / "model.safetensors")), cfg["num_local_experts"]).items()
            if ".mlp." in n}
    assert any(n.endswith("mlp.gate.weight") for n in want) and any(n.endswith("experts.gate_up_proj") for n in want)
    module = Named({n: tuple(t.shape) for n, t in want.items()}, fill=float("nan"))
    got = wl.load_into(module, str(mixtral), strict=False)
    assert got.missing_keys == []
    for name, t in want.items():
        assert torch.equal(module.get_parameter(name), t), name
