"""refresh(module, newer): only the tensors whose bytes changed are read and written in place,
found through the per-tensor sha256 our writer records — checked against hashlib, against the
safetensors library's reading of the newer file, and by the bytes the refresh read."""
import hashlib
import json

import pytest
import torch
from safetensors import safe_open as st_safe_open
from safetensors.torch import load_file as st_load_file, save_file as st_save_file

import weightloader as wl


class Stack(torch.nn.Module):
    def __init__(self, layers=50):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(256, 256) for _ in range(layers))


def state(seed, layers=50):
    g = torch.Generator().manual_seed(seed)
    return {f"layers.{i}.{p}": torch.randn(*((256, 256) if p == "weight" else (256,)), generator=g)
            for i in range(layers) for p in ("weight", "bias")}


def test_the_writer_records_each_tensors_sha256_as_hashlib_computes_it(tmp_path):
    tensors = {"a": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(5, dtype=torch.bfloat16),
               "strided": torch.arange(12, dtype=torch.float32).reshape(3, 4).t()}
    wl.save_file(tensors, tmp_path / "m.safetensors", tensor_digests=True)
    with st_safe_open(str(tmp_path / "m.safetensors"), "pt") as f:
        recorded = json.loads(f.metadata()["weightloader.tensor_sha256"])
        stored = {k: f.get_tensor(k) for k in f.keys()}
    assert recorded == {k: hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()
                        for k, t in stored.items()}
    assert torch.equal(stored["strided"], tensors["strided"])


def test_refresh_reads_only_the_changed_tensors_and_writes_them_in_place(tmp_path):
    old, new = state(0), state(0)
    changed = ["layers.7.weight", "layers.31.bias"]  # 2 of 100 tensors
    for name in changed:
        new[name] = new[name] + 1
    wl.save_file(old, tmp_path / "step-1.safetensors", tensor_digests=True)
    wl.save_file(new, tmp_path / "step-2.safetensors", tensor_digests=True)
    model = Stack()
    full = wl.load_into(model, tmp_path / "step-1.safetensors").report
    weight = model.layers[7].weight
    report = wl.refresh(model, tmp_path / "step-2.safetensors")
    assert sorted(report.changed) == sorted(changed) and report.unchanged == 98 and report.unrecorded == []
    assert report.bytes_read == 256 * 256 * 4 + 256 * 4 < full.bytes_read / 40
    assert model.layers[7].weight is weight  # in place: the live parameter, not a new one
    expected = st_load_file(str(tmp_path / "step-2.safetensors"))
    assert all(torch.equal(model.state_dict()[k], expected[k]) for k in expected)
    again = wl.refresh(model, tmp_path / "step-2.safetensors")  # it remembers what it now holds
    assert again.changed == [] and again.bytes_read == 0


def test_tensors_no_digest_describes_are_read_and_said_so(tmp_path):
    st_save_file(state(1), str(tmp_path / "theirs.safetensors"))  # the safetensors library records none
    wl.save_file(state(0), tmp_path / "ours.safetensors", tensor_digests=True)
    model = Stack()
    report = wl.refresh(model, tmp_path / "theirs.safetensors", since=tmp_path / "ours.safetensors")
    assert len(report.unrecorded) == 100 and len(report.changed) == 100
    expected = st_load_file(str(tmp_path / "theirs.safetensors"))
    assert all(torch.equal(model.state_dict()[k], expected[k]) for k in expected)


def test_a_module_weightloader_did_not_load_needs_since(tmp_path):
    wl.save_file(state(0), tmp_path / "m.safetensors", tensor_digests=True)
    with pytest.raises(wl.InvalidArgumentError, match="since="):
        wl.refresh(Stack(), tmp_path / "m.safetensors")


def test_an_llm_refreshes_every_rank_and_then_generates_as_one_built_from_the_newer_checkpoint(tmp_path):
    import os
    import shutil
    tiny = os.path.join(os.environ.get("WL_TESTDATA_DIR", ""), "hf-tiny-random-llama-2")
    if not os.path.isdir(tiny):
        pytest.skip("shared test data not found")
    tensors = st_load_file(os.path.join(tiny, "model.safetensors"))
    steps = []
    for step, scale in ((1, 1.0), (2, 3.0)):
        d = tmp_path / f"step-{step}"
        d.mkdir()
        shutil.copy(os.path.join(tiny, "config.json"), d / "config.json")
        changed = dict(tensors, **{"model.norm.weight": tensors["model.norm.weight"] * scale})
        wl.save_file(changed, d / "model.safetensors", tensor_digests=True)
        steps.append(d)
    greedy = wl.SamplingParams(temperature=0.0, max_tokens=8)
    llm = wl.LLM(str(steps[0]), tensor_parallel_size=2)
    report = llm.refresh(steps[1])
    assert report.changed == ["model.norm.weight"] and len(report.ranks) == 2
    assert report.bytes_read == 2 * tensors["model.norm.weight"].numel() * 2  # BF16, read by both ranks
    after = llm.generate([[1, 2, 3]], greedy)[0].outputs[0].token_ids
    fresh = wl.LLM(str(steps[1]), tensor_parallel_size=2).generate([[1, 2, 3]], greedy)[0].outputs[0].token_ids
    assert after == fresh
    assert llm.refresh(steps[1]).changed == []
