"""Decode speed of `weightloader generate` on a generated ~110 M parameter Llama, side by side with
the machine's limit and a peer.

Decoding one token reads every weight once, so memory bandwidth bounds tokens/s: the limit shown
is (bytes read per second by numpy over a buffer larger than the caches) / (weight bytes). The peer
is PyTorch eager (Debian's python3-torch) running the same model with a KV cache, in F32, with as
many threads. Writes bench/GENERATE.md. Usage: bench/generate_speed.py [--tokens 64] [--runs 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import time

import numpy as np

from run_all import machine, read_safetensors_f32  # bench/ is the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_bandwidth(nbytes=1 << 30, runs=3):
    """Bytes per second that all cores read together (numpy releases the GIL while summing)."""
    from concurrent.futures import ThreadPoolExecutor
    n = os.cpu_count()
    parts = [np.ones(nbytes // 4 // n, dtype=np.float32) for _ in range(n)]
    rates = []
    with ThreadPoolExecutor(n) as pool:
        for _ in range(runs):
            t = time.perf_counter()
            list(pool.map(lambda a: a.sum(), parts))
            rates.append(nbytes / (time.perf_counter() - t))
    return statistics.median(rates)


def ours(wl, model, tokens, dtype, tp):
    out = subprocess.run([wl, "generate", "--model", model, "--prompt-ids", "1", "-n", str(tokens), "-t", "0",
                          "--dtype", dtype, "--tp", str(tp)], check=True, capture_output=True, text=True)
    return float(re.search(r"achieved tok/s: ([0-9.]+)", out.stderr).group(1))


def torch_peer(model, tokens):
    import torch
    torch.set_num_threads(os.cpu_count())
    cfg = json.load(open(os.path.join(model, "config.json")))
    w = {k: torch.from_numpy(v) for k, v in read_safetensors_f32(os.path.join(model, "model.safetensors")).items()}
    D, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, L, eps = D // H, cfg["num_hidden_layers"], cfg.get("rms_norm_eps", 1e-6)
    lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2).float() / hd))
    kc = [torch.zeros(tokens + 1, KV, hd) for _ in range(L)]
    vc = [torch.zeros(tokens + 1, KV, hd) for _ in range(L)]

    def norm(x, g):
        return g * (x * torch.rsqrt(x.pow(2).mean() + eps))

    def rope(v, pos):
        c, s = torch.cos(pos * inv), torch.sin(pos * inv)
        a, b = v[..., : hd // 2], v[..., hd // 2:]
        return torch.cat([a * c - b * s, a * s + b * c], -1)

    tok, start = 1, None
    with torch.no_grad():
        for pos in range(tokens):
            if pos == 1:
                start = time.perf_counter()
            x = w["model.embed_tokens.weight"][tok]
            for l in range(L):
                p = f"model.layers.{l}."
                h = norm(x, w[p + "input_layernorm.weight"])
                q = rope((w[p + "self_attn.q_proj.weight"] @ h).view(H, hd), pos)
                kc[l][pos] = rope((w[p + "self_attn.k_proj.weight"] @ h).view(KV, hd), pos)
                vc[l][pos] = (w[p + "self_attn.v_proj.weight"] @ h).view(KV, hd)
                k = kc[l][: pos + 1].repeat_interleave(H // KV, 1)
                v = vc[l][: pos + 1].repeat_interleave(H // KV, 1)
                a = torch.softmax(torch.einsum("hd,thd->ht", q, k) / hd**0.5, -1)
                x = x + w[p + "self_attn.o_proj.weight"] @ torch.einsum("ht,thd->hd", a, v).reshape(-1)
                h = norm(x, w[p + "post_attention_layernorm.weight"])
                g = w[p + "mlp.gate_proj.weight"] @ h
                x = x + w[p + "mlp.down_proj.weight"] @ (torch.nn.functional.silu(g) * (w[p + "mlp.up_proj.weight"] @ h))
            tok = int(torch.argmax(lm @ norm(x, w["model.norm.weight"])))
    return (tokens - 1) / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/wl-bench-generate")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "GENERATE.md"))
    args = ap.parse_args()
    wl = os.path.join(args.build, "weightloader")
    model = os.path.join(args.dir, "llama-100m")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([wl, "synth", model, "--preset", "100m", "--dtype", "f32"], check=True, capture_output=True)
    cfg = json.load(open(os.path.join(model, "config.json")))
    params = sum(v.size for v in read_safetensors_f32(os.path.join(model, "model.safetensors")).values())
    bw = read_bandwidth()

    rows = []
    for dtype, tp in [("f32", 1), ("bf16", 1), ("f32", 2)]:
        rates = [ours(wl, model, args.tokens, dtype, tp) for _ in range(args.runs)]
        rows.append((f"weightloader generate --dtype {dtype} --tp {tp}", rates, params * (4 if dtype == "f32" else 2)))
    peer = [torch_peer(model, args.tokens) for _ in range(args.runs)]
    rows.append(("PyTorch eager (F32, KV cache)", peer, params * 4))

    torch_med = statistics.median(peer)
    lines = [
        "# Decode speed",
        "",
        f"Machine: {machine()}. Model: synthetic Llama preset `100m` ({params / 1e6:.0f} M parameters: hidden "
        f"{cfg['hidden_size']}, {cfg['num_hidden_layers']} layers, vocab {cfg['vocab_size']}, tied embeddings), "
        f"{args.tokens} greedy tokens from BOS, median of {args.runs} runs (min..max).",
        f"Memory read bandwidth (numpy sums over 1 GiB, one thread per core): {bw / 1e9:.2f} GB/s; the bound is that over the weight bytes. "
        "numpy's summing does not saturate the memory bus, so an engine can exceed this bound; it puts engines in proportion.",
        "",
        "| engine | tokens/s | bound (bandwidth / weight bytes) | of bound | vs PyTorch |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, rates, wbytes in rows:
        med = statistics.median(rates)
        bound = bw / wbytes
        lines.append(f"| {name} | {med:.1f} ({min(rates):.1f}..{max(rates):.1f}) | {bound:.1f} | {med / bound:.2f}x | {med / torch_med:.2f}x |")
    lines.append("")
    lines.append("Command: `build-deps/venv/bin/python bench/generate_speed.py` (after `scripts/setup.sh`).")
    text = "\n".join(lines) + "\n"
    open(args.results, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
