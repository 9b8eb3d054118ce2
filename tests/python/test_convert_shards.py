"""`weightloader convert --shard-size`: shards and index as Hugging Face's save_pretrained writes
them, read back by weightloader and by a plain reader of the safetensors layout (json + struct +
numpy; Debian has no `safetensors` package)."""
import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest
import torch

import weightloader as wl

CLI = pathlib.Path(os.environ.get("WL_CLI", pathlib.Path(__file__).resolve().parents[2] / "build" / "weightloader"))
NUMPY_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    """name -> (dtype name, numpy array), straight from the file's bytes."""
    data = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        if info["dtype"] == "BF16":  # numpy has no bfloat16: widen the bits to float32
            arr = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, NUMPY_DTYPES[info["dtype"]])
        out[name] = (info["dtype"], arr.reshape(info["shape"]))
    return out, meta


def hf_index(tensors, max_bytes):
    """What huggingface_hub's split_state_dict_into_shards_factory + save_pretrained give (its rule, restated)."""
    shards, current, current_size, total = [], [], 0, 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        total += size
        if size > max_bytes:
            shards.append([name])
            continue
        if current_size + size > max_bytes:
            shards.append(current)
            current, current_size = [], 0
        current.append(name)
        current_size += size
    if current:
        shards.append(current)
    weight_map = {name: f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
                  for i, names in enumerate(shards) for name in names}
    return json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2, sort_keys=True) + "\n"


@pytest.fixture()
def checkpoint(tmp_path):
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI)")
    g = torch.Generator().manual_seed(0)
    tensors = {
        "embed.weight": torch.randn(64, 32, generator=g),
        "layers.0.norm.weight": torch.randn(32, generator=g).half(),
        "layers.0.proj.weight": torch.randn(48, 32, generator=g).bfloat16(),
        "layers.1.big.weight": torch.randn(128, 64, generator=g),  # above the limit: a shard of its own
        "layers.1.steps": torch.arange(10, dtype=torch.int64),
        "head.weight": torch.randn(16, 32, generator=g),
        "lm.tête.bias": torch.randn(16, generator=g),  # json.dumps escapes it in the index
    }
    path = tmp_path / "pytorch_model.bin"
    torch.save(tensors, path)
    return tensors, path


def test_sharded_output_matches_hugging_face_and_reads_back(checkpoint, tmp_path):
    tensors, path = checkpoint
    out = tmp_path / "sharded"
    subprocess.run([str(CLI), "convert", str(path), str(out), "--shard-size", "10KB"], check=True,
                   capture_output=True)
    index_text = (out / "model.safetensors.index.json").read_text()
    assert index_text == hf_index(tensors, 10_000)
    index = json.loads(index_text)
    files = sorted(set(index["weight_map"].values()))
    assert sorted(p.name for p in out.glob("*.safetensors")) == files
    seen = {}
    for f in files:
        shard, meta = read_safetensors(out / f)
        assert meta == {"format": "pt"}
        for name, (dtype, arr) in shard.items():
            assert index["weight_map"][name] == f
            seen[name] = (dtype, arr)
    assert set(seen) == set(tensors)
    assert sum(a.nbytes if d != "BF16" else a.size * 2 for d, a in seen.values()) == index["metadata"]["total_size"]
    for name, t in tensors.items():
        dtype, arr = seen[name]
        assert dtype == {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}[t.dtype]
        np.testing.assert_array_equal(arr, t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())

    back = wl.load_file(str(out))  # weightloader reads the directory through its index
    assert set(back) == set(tensors)
    for name, t in tensors.items():
        assert torch.equal(back[name], t), name


def test_loader_kwargs_apply_to_the_shards(checkpoint, tmp_path):
    tensors, path = checkpoint
    out = tmp_path / "renamed"
    subprocess.run([str(CLI), "convert", str(path), str(out), "--shard-size", "20KB", "--kw", "strip_prefix=layers.",
                    "--dtype", "f16"], check=True, capture_output=True)
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert "0.norm.weight" in index["weight_map"] and "layers.0.norm.weight" not in index["weight_map"]
    shard, _ = read_safetensors(out / index["weight_map"]["embed.weight"])
    assert shard["embed.weight"][0] == "F16"


def test_one_safetensors_file_and_refusals(checkpoint, tmp_path):
    tensors, path = checkpoint
    single = tmp_path / "one.safetensors"
    subprocess.run([str(CLI), "convert", str(path), str(single)], check=True, capture_output=True)
    read, _ = read_safetensors(single)
    assert set(read) == set(tensors)
    for args, words in [([str(single), str(single)], "is the input"),
                        ([str(path), str(tmp_path / "x.gguf"), "--to", "safetensors"], "contradicts"),
                        ([str(path), str(tmp_path / "y.safetensors"), "--shard-size", "1MB"], "directory")]:
        r = subprocess.run([str(CLI), "convert", *args], capture_output=True, text=True)
        assert r.returncode == 1 and words in r.stderr, r.stderr
    assert not list(tmp_path.glob("*.tmp-*"))
