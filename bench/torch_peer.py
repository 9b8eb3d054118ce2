"""Peer for bench/run_all.py: torch.load + load_state_dict into an nn.Module, optionally followed by
.to(torch.bfloat16) (PyTorch's way of converting on load). Prints one JSON object.

Usage: bench/torch_peer.py BIN_FILE SHAPES_JSON [f32|bf16]
SHAPES_JSON is `weightloader inspect BIN_FILE --json` (the module's shapes, as a real program knows
them from its config, without reading the checkpoint twice).
"""
import json
import resource
import sys
import time

import torch


def module_for(shapes, device=None, dtype=None):
    """An nn.Module tree whose parameters have the checkpoint's dotted names and shapes (memory from
    torch.empty: allocated, not yet touched, like weightloader's parameters before a load; on the
    meta device with device="meta": no memory, as vLLM and transformers build big models)."""
    root = torch.nn.Module()
    for name, shape in shapes.items():
        *path, leaf = name.split(".")
        mod = root
        for part in path:
            if not hasattr(mod, part):
                mod.add_module(part, torch.nn.Module())
            mod = getattr(mod, part)
        mod.register_parameter(leaf, torch.nn.Parameter(torch.empty(shape, device=device, dtype=dtype),
                                                       requires_grad=False))
    return root


def main():
    path, shapes_json, dtype = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "f32")
    with open(shapes_json) as f:
        shapes = {t["name"]: tuple(t["shape"]) for t in json.load(f)["tensors"]}
    model = module_for(shapes)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state)
    del state
    if dtype == "bf16":
        model.to(torch.bfloat16)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(json.dumps({"seconds": seconds, "parameter_bytes": nbytes, "peak_rss_bytes": rss, "rss_before_load_bytes": before}))


if __name__ == "__main__":
    main()
