"""weightloader's Python load_into for bench/run_all.py: an nn.Module with the checkpoint's shapes
(allocated by torch, not yet touched, as torch_peer.py's; or, with `meta`, built on the meta
device so that the loader allocates it) filled from CHECKPOINT, in F32 or BF16.
Prints one JSON object: seconds, parameter_bytes, peak_rss_bytes, rss_before_load_bytes.

Usage: PYTHONPATH=build/python bench/python_load_into.py CHECKPOINT SHAPES_JSON [f32|bf16] [torch|meta]
"""
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peer import module_for  # noqa: E402  (the same module as the torch peer's)

import weightloader as wl  # noqa: E402


def main():
    path, shapes_json = sys.argv[1], sys.argv[2]
    dtype = sys.argv[3] if len(sys.argv) > 3 else "f32"
    memory = sys.argv[4] if len(sys.argv) > 4 else "torch"
    with open(shapes_json) as f:
        shapes = {t["name"]: tuple(t["shape"]) for t in json.load(f)["tensors"]}
    # On the meta device the module has no memory: the load allocates it (and its time counts).
    model = module_for(shapes, device="meta" if memory == "meta" else None,
                       dtype=torch.bfloat16 if dtype == "bf16" else None)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    wl.load_into(model, path, progress=False)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(json.dumps({"seconds": seconds, "parameter_bytes": nbytes, "peak_rss_bytes": rss,
                      "rss_before_load_bytes": before, "staging_bound": 32 << 20}))


if __name__ == "__main__":
    main()
