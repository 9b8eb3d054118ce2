"""name_map="auto": a Meta-layout checkpoint (torch.save, wrapped as torch.compile leaves it) loaded
into a module with Hugging Face names, bit for bit equal to the Hugging Face original."""
import json
import shutil
import subprocess
import os

import pytest
import torch

import weightloader as wl
from make_meta_checkpoint import meta_name, to_meta_rows
from named_module import Named


@pytest.fixture
def hf_tiny(testdata):
    return testdata / "hf-tiny-random-llama-2"


@pytest.fixture
def meta_checkpoint(hf_tiny, tmp_path):
    config = json.loads((hf_tiny / "config.json").read_text())
    original = wl.load_file(str(hf_tiny / "model.safetensors"))
    state = {}
    for name, t in original.items():
        if name.endswith("q_proj.weight"):
            t = to_meta_rows(t, config["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            t = to_meta_rows(t, config.get("num_key_value_heads", config["num_attention_heads"]))
        state["_orig_mod." + meta_name(name)] = t.clone()
    path = tmp_path / "meta" / "ckpt.pth"
    path.parent.mkdir()
    torch.save(state, path)
    shutil.copy(hf_tiny / "config.json", path.parent / "config.json")  # the head counts
    return path, original


def test_auto_loads_meta_names_and_rows_into_hf_names(meta_checkpoint):
    path, original = meta_checkpoint
    module = Named({k: v.shape for k, v in original.items()}, torch.bfloat16)
    loader = wl.WeightLoaderRegistry.get("local")(file_pattern="*.pth", name_map="auto")
    report = loader.load_weights(module, loader.get_weights(str(path)))
    assert report["names"]["summary"] == "auto (meta under _orig_mod. → hf), 21 of 21 matched"
    assert report["names"]["from"] == "meta" and report["names"]["to"] == "hf"
    state = module.state_dict()
    for name, t in original.items():
        assert torch.equal(state[name], t), name


def test_load_into_takes_name_map_auto(meta_checkpoint):
    path, original = meta_checkpoint
    module = Named({k: v.shape for k, v in original.items()}, torch.bfloat16)
    keys = wl.load_into(module, path, name_map="auto")
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    assert all(torch.equal(module.state_dict()[n], t) for n, t in original.items())


def test_without_auto_the_names_do_not_match(meta_checkpoint):
    path, original = meta_checkpoint
    module = Named({k: v.shape for k, v in original.items()}, torch.bfloat16)
    with pytest.raises(wl.errors.InvalidArgumentError,
                       match=r"names are meta \(prefix _orig_mod\.\), the model's hf: pass name_map=auto.*MissingParameters"):
        wl.load_into(module, path)


def test_a_partial_match_is_refused_with_the_candidates(meta_checkpoint):
    path, original = meta_checkpoint
    shapes = {k: v.shape for k, v in original.items()}
    shapes["model.layers.9.input_layernorm.weight"] = (16,)
    with pytest.raises(wl.errors.InvalidArgumentError, match=r"NameSchemePartial") as e:
        wl.load_into(Named(shapes, torch.bfloat16), path, name_map="auto")
    assert "model.layers.9.input_layernorm.weight" in str(e.value) and "candidates" in str(e.value)


def test_cli_inspect_and_load_say_what_names_they_saw(meta_checkpoint):
    path, _ = meta_checkpoint
    cli = os.environ.get("WL_CLI")
    if not cli:
        pytest.skip("WL_CLI is not set")
    out = subprocess.run([cli, "inspect", str(path)], check=True, capture_output=True, text=True).stdout
    assert "names: meta (prefix _orig_mod.)" in out
    out = subprocess.run([cli, "load", str(path), "--name-map", "auto", "-q"], check=True, capture_output=True, text=True).stdout
    assert "names       auto (meta under _orig_mod. → hf), 21 of 21 matched" in out


def test_detect_name_scheme_on_names_and_modules(meta_checkpoint):
    path, original = meta_checkpoint
    d = wl.detect_name_scheme(wl.LocalWeightLoader(file_pattern="*.pth").get_weights(str(path)))
    assert d == {"scheme": "meta", "prefix": "_orig_mod.", "matched": 21, "total": 21, "summary": "meta (prefix _orig_mod.)"}
    assert wl.detect_name_scheme(Named({k: v.shape for k, v in original.items()}, torch.bfloat16))["summary"] == "hf"
    assert wl.detect_name_scheme(["blk.0.attn_q.weight", "extra"])["summary"] == "gguf, 1 of 2 names"
