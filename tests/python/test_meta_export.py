"""Our load of a Meta directory against llama2.c's own conversion of it: karpathy/llama2.c's export.py
(--meta-llama DIR, legacy version 0) concatenates the shards itself and keeps Meta's rotary layout;
our llama2c reader of its output and our meta loader of the directory must give the same tensors bit
for bit, and the same generated tokens. export.py is not part of this repository: point
WL_LLAMA2C_EXPORT at a copy (with model.py beside it), e.g.

    WL_LLAMA2C_EXPORT=/tmp/llama2c/export.py pytest tests/python/test_meta_export.py
"""
import os
import subprocess
import sys

import pytest
import torch

import weightloader as wl
from make_meta_checkpoint import make, read_safetensors
from test_name_map import Named

EXPORT = os.environ.get("WL_LLAMA2C_EXPORT")
pytestmark = pytest.mark.skipif(not EXPORT, reason="set WL_LLAMA2C_EXPORT to llama2.c's export.py to compare with it")


@pytest.mark.parametrize("shards", [2, 4])
def test_export_py_output_loads_the_same_as_the_meta_directory(shards, testdata, tmp_path):
    hf = testdata / "hf-tiny-random-llama-2"
    meta = make(hf, tmp_path / "meta", shards)
    exported = tmp_path / "exported.bin"
    subprocess.run([sys.executable, EXPORT, str(exported), "--meta-llama", str(meta), "--version", "0"], check=True,
                   cwd=os.path.dirname(EXPORT), capture_output=True)
    shapes = {k: v.shape for k, v in read_safetensors(hf / "model.safetensors").items()}

    def load(loader, path):
        module = Named(shapes, torch.float32)  # export.py writes float32
        l = wl.WeightLoaderRegistry.get(loader)()
        l.load_weights(module, l.get_weights(str(path)))
        return module.state_dict()
    ours, theirs = load("meta", meta), load("llama2c", exported)
    for name in shapes:
        assert torch.equal(ours[name], theirs[name]), name

    greedy = wl.SamplingParams(temperature=0, max_tokens=12)
    prompt = [1, 42, 99]
    assert (wl.LLM(str(meta)).generate(prompt, greedy)[0].outputs[0].token_ids ==
            wl.LLM(str(exported)).generate(prompt, greedy)[0].outputs[0].token_ids)
