"""Mixture-of-experts checkpoints in the layouts transformers has written, for the tests and for
scripts/llama-cpp-check.sh: from per-expert tensors to transformers 5's stacks."""
import re

import torch


def transformers5_layout(tensors, experts):
    """The per-expert tensors stacked as transformers 5 saves a mixture-of-experts layer:
    mlp.experts.gate_up_proj [experts, 2 ff, hidden] (gate rows, then up), mlp.experts.down_proj
    [experts, hidden, ff], the router as mlp.gate."""
    out, stacks = {}, {}
    for name, t in tensors.items():
        m = re.fullmatch(r"model\.layers\.(\d+)\.(?:block_sparse_moe|mlp)\.experts\.(\d+)\.(\w+)\.weight", name)
        if not m:
            out[name.replace("block_sparse_moe.gate.", "mlp.gate.")] = t
            continue
        layer, e, proj = int(m[1]), int(m[2]), {"w1": "gate", "gate_proj": "gate", "w3": "up", "up_proj": "up"}.get(m[3], "down")
        stacks.setdefault(layer, {}).setdefault(proj, [None] * experts)[e] = t
    for layer, p in stacks.items():
        at = f"model.layers.{layer}.mlp.experts."
        out[at + "gate_up_proj"] = torch.stack([torch.cat([g, u]) for g, u in zip(p["gate"], p["up"])])
        out[at + "down_proj"] = torch.stack(p["down"])
    return out
