"""Makes a Meta-layout Llama checkpoint (params.json + consolidated.NN.pth) from a Hugging Face
model directory or a llama2.c v0 file, with plain torch and no weightloader code: names as Meta's,
q/k rows in Meta's interleaved rotary layout (undoing the permute of transformers'
convert_llama_weights_to_hf.py; llama2.c files have it already), each tensor split across the
shards as Meta's model-parallel code splits it.

    build-deps/venv/bin/python make_meta_checkpoint.py HF_DIR_OR_LLAMA2C_BIN OUT_DIR --shards 2 [--embedding-dim 0]
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
    """Undoes the permute of transformers' convert_llama_weights_to_hf.py (Meta's interleaved rows)."""
    rows, cols = w.shape
    return w.view(heads, 2, rows // heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def split_and_save(state, params, out_dir, shards, embedding_dim=1):
    """Writes Meta-named, Meta-layout `state` as OUT_DIR/params.json and consolidated.00.pth ...;
    embedding_dim 1: Llama 1/2's tok_embeddings split (ParallelEmbedding), 0: Llama 3's
    (VocabParallelEmbedding). Every shard also carries rope.freqs, as Llama 1's files do."""
    out_dir = pathlib.Path(out_dir)
    states = [{} for _ in range(shards)]
    for name, t in state.items():
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
        for piece_state, piece in zip(states, pieces):
            piece_state[name] = piece.clone()
    head_dim = params["dim"] // params["n_heads"]
    freqs = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, piece_state in enumerate(states):
        piece_state["rope.freqs"] = freqs.to(state["tok_embeddings.weight"].dtype).clone()
        torch.save(piece_state, out_dir / f"consolidated.{i:02d}.pth")
    (out_dir / "params.json").write_text(json.dumps(params))
    return out_dir


def make(hf_dir, out_dir, shards, embedding_dim=1):
    """A Meta directory from a Hugging Face one (config.json + model.safetensors)."""
    hf_dir = pathlib.Path(hf_dir)
    config = json.loads((hf_dir / "config.json").read_text())
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    state = {}
    for hf, t in read_safetensors(hf_dir / "model.safetensors").items():
        if hf.endswith("self_attn.q_proj.weight"):
            t = to_meta_rows(t, heads)
        elif hf.endswith("self_attn.k_proj.weight"):
            t = to_meta_rows(t, kv_heads)
        state[meta_name(hf)] = t
    # multiple_of as export.py needs it to size the FFN as the model has it (4 * dim * 2/3, rounded up).
    params = {"dim": config["hidden_size"], "multiple_of": 64, "n_heads": heads, "n_layers": config["num_hidden_layers"],
              "norm_eps": config["rms_norm_eps"], "vocab_size": -1}
    if kv_heads != heads:
        params["n_kv_heads"] = kv_heads
    return split_and_save(state, params, out_dir, shards, embedding_dim)


def make_from_llama2c(path, out_dir, shards, embedding_dim=1):
    """A Meta directory from a llama2.c legacy (v0) checkpoint, which keeps Meta's rotary layout:
    header of 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len), then
    float32 arrays in run.c's order; a shared classifier is written out as output.weight."""
    data = pathlib.Path(path).read_bytes()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", data[:28])
    shared, vocab = vocab > 0, abs(vocab)
    kv_dim = dim * kv_heads // heads
    floats = torch.frombuffer(bytearray(data[28:]), dtype=torch.float32)
    at = 0

    def take(*shape):
        nonlocal at
        n = 1
        for d in shape:
            n *= d
        t = floats[at:at + n].reshape(shape).clone()
        at += n
        return t
    state = {"tok_embeddings.weight": take(vocab, dim)}
    per_layer = [("attention_norm", (dim,)), ("attention.wq", (dim, dim)), ("attention.wk", (kv_dim, dim)),
                 ("attention.wv", (kv_dim, dim)), ("attention.wo", (dim, dim)), ("ffn_norm", (dim,)),
                 ("feed_forward.w1", (hidden, dim)), ("feed_forward.w2", (dim, hidden)), ("feed_forward.w3", (hidden, dim))]
    for stem, shape in per_layer:
        stacked = take(layers, *shape)
        for i in range(layers):
            state[f"layers.{i}.{stem}.weight"] = stacked[i].clone()
    state["norm.weight"] = take(dim)
    take(seq_len, dim // heads // 2)  # freq_cis_real
    take(seq_len, dim // heads // 2)  # freq_cis_imag
    state["output.weight"] = state["tok_embeddings.weight"].clone() if shared else take(vocab, dim)
    params = {"dim": dim, "multiple_of": 1, "n_heads": heads, "n_kv_heads": kv_heads, "n_layers": layers,
              "norm_eps": 1e-5, "vocab_size": vocab, "max_seq_len": seq_len}
    return split_and_save(state, params, out_dir, shards, embedding_dim)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", help="a Hugging Face model directory, or a llama2.c v0 checkpoint file")
    ap.add_argument("out_dir")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--embedding-dim", type=int, choices=(0, 1), default=1)
    a = ap.parse_args()
    maker = make if pathlib.Path(a.source).is_dir() else make_from_llama2c
    print(maker(a.source, a.out_dir, a.shards, a.embedding_dim))
