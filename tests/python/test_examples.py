"""examples/python/seed_loaders.py: the seed's three loaders against weightloader."""
import importlib.util
import pathlib

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("seed_loaders", ROOT / "examples" / "python" / "seed_loaders.py")
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)


def test_custom_binary_with_a_transposed_layer(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    with open(tmp_path / "meta.txt", "w") as meta, open(tmp_path / "model.bin", "wb") as data:
        meta.write("fc.weight.transposed:4,3\nfc.bias:3\n")
        data.write(w.T.copy().tobytes() + np.ones(3, np.float32).tobytes())
    loader = seed.CustomBinaryWeightLoader()
    weights = loader.get_weights(tmp_path)
    model = torch.nn.Module()
    model.fc = torch.nn.Linear(4, 3)
    loader.load_weights(model, weights)
    assert torch.equal(model.fc.weight, torch.from_numpy(w))
    assert model.fc.bias.tolist() == [1, 1, 1]


def test_local_raises_file_not_found_and_hf_reads_a_directory(tmp_path):
    torch.save({"w": torch.arange(4.0)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(FileNotFoundError):
        seed.LocalWeightLoader(file_pattern="*.safetensors").get_weights(tmp_path)
    loader = seed.HFWeightLoader()
    weights = loader.get_weights(tmp_path)
    model = seed.mirror(weights)
    loader.load_weights(model, weights)
    assert model.w.tolist() == [0, 1, 2, 3]
    local = seed.LocalWeightLoader(file_pattern="*.bin")
    assert list(local.get_weights(tmp_path)) == ["w"]


def test_hf_by_model_id_and_revision_through_the_local_cache(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "models--org--tiny"
    for commit, value in (("a" * 40, 1.0), ("b" * 40, 2.0)):
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        torch.save({"w": torch.full((3,), value)}, snapshot / "pytorch_model.bin")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    (repo / "refs" / "v2").write_text("b" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for revision, value in (("main", 1.0), ("v2", 2.0), ("b" * 40, 2.0)):
        loader = seed.HFWeightLoader(revision=revision)
        weights = loader.get_weights("org/tiny")
        model = seed.mirror(weights)
        loader.load_weights(model, weights)
        assert model.w.tolist() == [value] * 3
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # else a revision missing from the cache is downloaded (test_hub.py)
    with pytest.raises(FileNotFoundError, match="not in the local Hugging Face cache.*HF_HUB_OFFLINE"):
        seed.HFWeightLoader(revision="nope").get_weights("org/tiny")
