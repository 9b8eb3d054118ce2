"""The seed's three loaders, written against weightloader in the seed's own shape (vLLM's
BaseWeightLoader: get_weights says where to read, load_weights how to put it in).

    build-deps/venv/bin/python examples/python/seed_loaders.py CHECKPOINT_DIR
loads a directory with each loader that fits it into a model mirroring the checkpoint, and prints
what each one loaded."""
import sys
from typing import Dict

import torch
from torch import nn

import weightloader as wl


class HFWeightLoader(wl.BaseWeightLoader):
    """Hugging Face checkpoints by model id (through the local cache) or directory, at a revision,
    with weightloader's hf loader instead of transformers: nothing is read until load_weights."""

    def __init__(self, revision="main", dtype=torch.float32):
        self.inner = wl.HfWeightLoader(revision=revision, dtype=dtype)

    def get_weights(self, model_name_or_path) -> wl.Weights:
        return self.inner.get_weights(model_name_or_path)

    def load_weights(self, model: nn.Module, weights) -> None:
        self.inner.load_weights(model, weights)


class LocalWeightLoader(wl.BaseWeightLoader):
    """Every file of a directory matching a pattern; FileNotFoundError when none does."""

    def __init__(self, file_pattern="*.safetensors"):
        self.inner = wl.LocalWeightLoader(file_pattern=file_pattern)

    def get_weights(self, model_name_or_path) -> wl.Weights:
        return self.inner.get_weights(model_name_or_path)  # raises FileNotFoundError if nothing matches


class CustomBinaryWeightLoader(wl.BaseWeightLoader):
    """meta.txt (`name:d0,d1,...`) + model.bin (float32). As in the seed, one layer is stored
    transposed (`*.transposed` names hold W^T): get_weights returns plain tensors, the transposed
    ones as transposed views, and the default load_weights gathers them into place (no copy of
    the rest)."""

    def __init__(self, dtype=torch.float32):
        self.inner = wl.CustomBinaryWeightLoader(dtype=dtype)

    def get_weights(self, model_name_or_path) -> Dict[str, torch.Tensor]:
        lazy = self.inner.get_weights(model_name_or_path)
        out = {}
        for name in lazy:
            if name.endswith(".transposed"):
                out[name[: -len(".transposed")]] = lazy[name].t()  # a strided view, read as such
            else:
                out[name] = lazy[name]
        return out


def mirror(weights, transposed=False) -> nn.Module:
    """A module with one parameter per tensor (dots become nested modules)."""
    root = nn.Module()
    for name, t in weights.items():
        *path, leaf = name.split(".")
        m = root
        for part in path:
            if not hasattr(m, part):
                m.add_module(part, nn.Module())
            m = getattr(m, part)
        m.register_parameter(leaf, nn.Parameter(torch.empty(t.shape, dtype=t.dtype), requires_grad=False))
    return root


if __name__ == "__main__":
    path = sys.argv[1]
    for loader in (LocalWeightLoader(), HFWeightLoader(), CustomBinaryWeightLoader()):
        try:
            weights = loader.get_weights(path)
        except (FileNotFoundError, ValueError) as e:
            print(f"{type(loader).__name__}: {e}")
            continue
        model = mirror(weights)
        loader.load_weights(model, weights)
        print(f"{type(loader).__name__}: loaded {len(list(model.parameters()))} tensors")
