"""Makes a Meta-layout Llama checkpoint (params.json + consolidated.NN.pth) from a Hugging Face
model directory, with plain torch and no weightloader code: names as Meta's, q/k rows in Meta's
interleaved rotary layout (undoing the permute of transformers' convert_llama_weights_to_hf.py),
each tensor split across the shards as Meta's model-parallel code splits it.

    /usr/bin/python3 make_meta_checkpoint.py HF_DIR OUT_DIR --shards 2 [--embedding-dim 0]
"""
import argparse
import json
import pathlib
import struct

import torch

_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
_WHOLE = {"model.embed_tokens": "tok_embeddings", "model.norm": "norm", "lm_head": "output"}
_LAYER = {"input_layernorm": "attention_norm", "self_attn.q_proj": "attention.wq", "self_attn.k_proj": "attention.wk",
          "self_attn.v_proj": "attention.wv", "self_attn.o_proj": "attention.wo",
          "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "feed_forward.w1",
          "mlp.up_proj": "feed_forward.w3", "mlp.down_proj": "feed_forward.w2"}
# Meta's ColumnParallelLinear (split along dim 0) and RowParallelLinear (dim 1).
_ROWS = ("attention.wq", "attention.wk", "attention.wv", "feed_forward.w1", "feed_forward.w3", "output")
_COLUMNS = ("attention.wo", "feed_forward.w2")


def read_safetensors(path):
    """{name: tensor} of a safetensors file, parsed here (8-byte length, JSON header, data)."""
    data = pathlib.Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + length + begin:8 + length + end])
        out[name] = torch.frombuffer(raw, dtype=_DTYPES[info["dtype"]]).reshape(info["shape"]).clone()
    return out


def meta_name(hf):
    stem, suffix = hf.rsplit(".", 1)
    if stem in _WHOLE:
        return f"{_WHOLE[stem]}.{suffix}"
    _, _, n, rest = stem.split(".", 3)
    return f"layers.{n}.{_LAYER[rest]}.{suffix}"


def to_meta_rows(w, heads):
    rows, cols = w.shape
    return w.view(heads, 2, rows // heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def make(hf_dir, out_dir, shards, embedding_dim=1):
    """Writes OUT_DIR/params.json and consolidated.00.pth ...; embedding_dim 1: Llama 1/2's
    tok_embeddings split (ParallelEmbedding), 0: Llama 3's (VocabParallelEmbedding)."""
    hf_dir, out_dir = pathlib.Path(hf_dir), pathlib.Path(out_dir)
    config = json.loads((hf_dir / "config.json").read_text())
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    tensors = read_safetensors(hf_dir / "model.safetensors")
    states = [{} for _ in range(shards)]
    for hf, t in tensors.items():
        if hf.endswith("self_attn.q_proj.weight"):
            t = to_meta_rows(t, heads)
        elif hf.endswith("self_attn.k_proj.weight"):
            t = to_meta_rows(t, kv_heads)
        name = meta_name(hf)
        stem = name.rsplit(".", 1)[0].split(".", 2)[-1] if name.startswith("layers.") else name.rsplit(".", 1)[0]
        if t.dim() == 1:
            pieces = [t] * shards
        elif stem in _ROWS:
            pieces = t.chunk(shards, 0)
        elif stem in _COLUMNS:
            pieces = t.chunk(shards, 1)
        elif stem == "tok_embeddings":
            pieces = t.chunk(shards, embedding_dim)
        else:
            raise ValueError(f"no split rule for {name}")
        for state, piece in zip(states, pieces):
            state[name] = piece.clone()
    head_dim = config["hidden_size"] // heads
    freqs = 1.0 / (config.get("rope_theta", 10000.0) ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, state in enumerate(states):
        state["rope.freqs"] = freqs.to(torch.bfloat16).clone()  # as Llama 1's files carry it
        torch.save(state, out_dir / f"consolidated.{i:02d}.pth")
    params = {"dim": config["hidden_size"], "multiple_of": 64, "n_heads": heads, "n_layers": config["num_hidden_layers"],
              "norm_eps": config["rms_norm_eps"], "vocab_size": -1}
    if kv_heads != heads:
        params["n_kv_heads"] = kv_heads
    (out_dir / "params.json").write_text(json.dumps(params))
    return out_dir


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hf_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--embedding-dim", type=int, choices=(0, 1), default=1)
    a = ap.parse_args()
    print(make(a.hf_dir, a.out_dir, a.shards, a.embedding_dim))
