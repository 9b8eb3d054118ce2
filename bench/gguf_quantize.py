"""Quantising speed of every block type `weightloader convert --gguf-type` writes, against gguf-py's
gguf.quants.quantize (the pinned gguf-py; what llama.cpp's convert_hf_to_gguf.py runs) on the same
64 MiB of F32: a one-layer Llama in Hugging Face's layout (hidden 1024, intermediate 3840, vocabulary
384: 16 Mi matrix elements, every row a whole number of 256-blocks, so every type quantises every
matrix), made once in --dir.

Two ratios, gguf-py's time over weightloader's, best of --runs each, all single-threaded:
- in memory: weightloader's quantisers alone (bench/gguf_quantize.cpp, wl_bench_gguf_quantize, on the
  same values in one array) against gguf-py's quantize() on the matrices as NumPy arrays;
- convert: the whole `weightloader convert --gguf-type T` (a fresh process reading the safetensors
  file from the page cache, quantising, writing the GGUF; f16, which quantises nothing, is shown as
  the floor of that path) against the same quantize() alone (no reading, no writing for gguf-py).

    PYTHONPATH=build/python build-deps/venv/bin/python bench/gguf_quantize.py [--dir /tmp/wl-gguf-quantize] [--runs 3] [--types q4_0,mxfp4]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gguf_decode import best_of  # noqa: E402  (one timing loop: a warm-up, then the best of runs)

TYPES = ["q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "mxfp4", "tq2_0", "tq1_0"]
HIDDEN, INTERMEDIATE, VOCAB = 1024, 3840, 384  # 4 H^2 + 3 H I + 2 V H = 16 Mi


def make_model(directory):
    """The model's matrices (name -> float32 array), written to directory/llama once."""
    rng = np.random.default_rng(1)
    p = "model.layers.0."
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "lm_head.weight": (VOCAB, HIDDEN),
              p + "self_attn.q_proj.weight": (HIDDEN, HIDDEN), p + "self_attn.k_proj.weight": (HIDDEN, HIDDEN),
              p + "self_attn.v_proj.weight": (HIDDEN, HIDDEN), p + "self_attn.o_proj.weight": (HIDDEN, HIDDEN),
              p + "mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN), p + "mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
              p + "mlp.down_proj.weight": (HIDDEN, INTERMEDIATE)}
    matrices = {n: (rng.standard_normal(s) * 0.02).astype(np.float32) for n, s in shapes.items()}
    assert sum(m.size for m in matrices.values()) == 16 << 20
    path = os.path.join(directory, "llama")
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        from safetensors.numpy import save_file
        os.makedirs(path, exist_ok=True)
        config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
                  "intermediate_size": INTERMEDIATE, "num_attention_heads": 8, "num_key_value_heads": 8,
                  "num_hidden_layers": 1, "vocab_size": VOCAB, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                  "max_position_embeddings": 128, "tie_word_embeddings": False, "torch_dtype": "float32"}
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(config, f)
        ones = np.ones(HIDDEN, dtype=np.float32)
        save_file({**matrices, "model.norm.weight": ones, p + "input_layernorm.weight": ones,
                   p + "post_attention_layernorm.weight": ones}, os.path.join(path, "model.safetensors"))
    return path, matrices


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/tmp/wl-gguf-quantize")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--build", default="build")
    p.add_argument("--types", default=",".join(TYPES))
    a = p.parse_args()
    import gguf
    from gguf import quants
    os.makedirs(a.dir, exist_ok=True)
    model, matrices = make_model(a.dir)
    cli = os.path.join(a.build, "weightloader")
    out = os.path.join(a.dir, "out.gguf")
    mib = sum(m.nbytes for m in matrices.values()) / 2**20

    def convert(gtype):
        subprocess.run([cli, "convert", model, out, "--gguf-type", gtype, "--no-tokenizer", "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        os.remove(out)

    raw = os.path.join(a.dir, "matrices.f32")
    if not os.path.exists(raw):
        np.concatenate([m.ravel() for m in matrices.values()]).tofile(raw)

    def in_memory(gtype):
        done = subprocess.run([os.path.join(a.build, "bench", "wl_bench_gguf_quantize"), raw, gtype.upper(),
                               str(a.runs)], check=True, capture_output=True, text=True)
        return float(done.stdout)

    convert("f16")  # warm: the page cache, the binary
    floor = best_of(a.runs, lambda: convert("f16"))
    print(f"{mib:.0f} MiB of F32 in {len(matrices)} matrices; weightloader convert --gguf-type f16 (no quantising): "
          f"{floor:.3f} s\n")
    print("| type | weightloader quantisers s | weightloader convert s | gguf-py quantize s | "
          "gguf-py / weightloader, in memory | gguf-py / weightloader convert |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in a.types.split(","):
        qtype = gguf.GGMLQuantizationType[t.upper()]
        alone = in_memory(t)
        ours = best_of(a.runs, lambda: convert(t))
        peer = best_of(a.runs, lambda: [quants.quantize(m, qtype) for m in matrices.values()])
        print(f"| {t.upper()} | {alone:.3f} ({mib / alone:.0f} MiB/s) | {ours:.3f} | {peer:.3f} ({mib / peer:.0f} MiB/s) | "
              f"{peer / alone:.1f}x | {peer / ours:.1f}x |", flush=True)

if __name__ == "__main__":
    main()
