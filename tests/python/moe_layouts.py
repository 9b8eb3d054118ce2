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


def qwen2_moe_from_mixtral(tensors, cfg, norm_topk_prob=True, shared_seed=None):
    """Mixtral's tiny checkpoint as a Qwen2-MoE one: its experts under mlp.experts.E.gate_proj/up_proj/
    down_proj, q/k/v biases of zero, and a shared expert of 4 units behind its sigmoid gate: one whose
    output is zero (shared_seed None: the model then computes Mixtral's logits when top-k weights are
    renormalised), or random weights from that seed. Returns (tensors, config)."""
    out = {}
    for name, t in tensors.items():
        name = name.replace("block_sparse_moe.", "mlp.")
        for old, new in (("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj")):
            name = name.replace(f".{old}.weight", f".{new}.weight")
        out[name] = t
    hidden, kv = cfg["hidden_size"], cfg["hidden_size"] // cfg["num_attention_heads"] * cfg["num_key_value_heads"]
    g = torch.Generator().manual_seed(shared_seed) if shared_seed is not None else None
    for layer in range(cfg["num_hidden_layers"]):
        at = f"model.layers.{layer}."
        for proj, rows in (("q_proj", hidden), ("k_proj", kv), ("v_proj", kv)):
            out[f"{at}self_attn.{proj}.bias"] = torch.zeros(rows)
        for proj, shape in (("gate_proj", (4, hidden)), ("up_proj", (4, hidden)), ("down_proj", (hidden, 4))):
            fixed = torch.ones(shape) if proj != "down_proj" else torch.zeros(shape)
            out[f"{at}mlp.shared_expert.{proj}.weight"] = fixed if g is None else torch.randn(shape, generator=g) * 0.3
        out[f"{at}mlp.shared_expert_gate.weight"] = torch.ones(1, hidden) if g is None else torch.randn(1, hidden, generator=g)
    cfg = dict(cfg, model_type="qwen2_moe", architectures=["Qwen2MoeForCausalLM"], moe_intermediate_size=cfg["intermediate_size"],
               norm_topk_prob=norm_topk_prob, shared_expert_intermediate_size=4)
    cfg["num_experts"] = cfg.pop("num_local_experts")
    return out, cfg
