#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets into OUT/<target>/: the shared reference files and
# small checkpoints of every format written by our own CLI (nothing binary is kept in the repo).
# Usage: fuzz/make_seeds.sh CLI OUT
set -euo pipefail
cli=$1 out=$2
testdata="$(dirname "$0")/../../shared/testdata"
py="$(cd "$(dirname "$0")/.." && pwd)/build-deps/venv/bin/python"  # the project's environment (scripts/setup.sh)
rm -rf "$out" && mkdir -p "$out"/{safetensors,index_json,pytorch_zip,pickle,gguf,llama2c,custom_binary_meta,config_json,detect,tokenizer}
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

# A Llama of 1 layer, hidden 32, 2 heads (1 kv head), vocab 32, in F32 safetensors with its config.json:
# small enough that whole files stay useful fuzz inputs.
mkdir -p "$work/st"
$py - "$work/st" <<'PY'
import json, struct, sys
d, h, kv, v = 32, 32, 16, 32
shapes = {"model.embed_tokens.weight": [v, d], "model.norm.weight": [d], "lm_head.weight": [v, d]}
for n, s in {"input_layernorm": [d], "post_attention_layernorm": [d], "self_attn.q_proj": [d, d],
             "self_attn.k_proj": [kv, d], "self_attn.v_proj": [kv, d], "self_attn.o_proj": [d, d],
             "mlp.gate_proj": [h, d], "mlp.up_proj": [h, d], "mlp.down_proj": [d, h]}.items():
    shapes[f"model.layers.0.{n}.weight"] = s
header, data = {"__metadata__": {"format": "pt"}}, b""
for name, shape in shapes.items():
    n = 1
    for x in shape: n *= x
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack(f"<{n}f", *[(i % 7) * 0.25 - 0.75 for i in range(n)])
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(f"{sys.argv[1]}/model.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": h,
           "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": v,
           "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "tie_word_embeddings": False},
          open(f"{sys.argv[1]}/config.json", "w"))
PY
heads=(--heads 2 --kv-heads 1 --seq-len 16)
"$cli" convert "$work/st" "$work/f16.gguf" --to gguf --gguf-type f16 "${heads[@]}" >/dev/null
"$cli" convert "$work/st" "$work/f32.gguf" --to gguf --gguf-type f32 "${heads[@]}" >/dev/null
"$cli" convert "$work/st" "$work/q8.gguf" --to gguf --gguf-type q8_0 "${heads[@]}" >/dev/null
for v in 0 1 2; do
  "$cli" convert "$work/st" "$work/v$v.l2c" --to llama2c --llama2c-version $v --group-size 32 "${heads[@]}" >/dev/null
done
"$cli" convert "$work/st" "$work/cb" --to custom_binary >/dev/null
"$cli" synth "$work/sharded" --preset tiny --layers 1 --shards 2 >/dev/null

cp "$work/st/model.safetensors" "$testdata"/safetensors-vectors/*.safetensors "$out/safetensors/"
cp "$work/sharded/model.safetensors.index.json" "$out/index_json/sharded.json"
printf '{"metadata":{"total_size":8},"weight_map":{"w":"model.safetensors"}}' >"$out/index_json/one_shard.json"
cp "$testdata"/pytorch-zip/* "$out/pytorch_zip/"
$py - "$out/pickle" "$testdata"/pytorch-zip/* <<'PY'
import sys, zipfile
for i, path in enumerate(sys.argv[2:]):
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.endswith("/data.pkl"): open(f"{sys.argv[1]}/{i}.pkl", "wb").write(z.read(name))
PY
cp "$work"/*.gguf "$out/gguf/"
# llama2c target input: the file size (u64 LE), then the file's first 256 bytes.
$py - "$out/llama2c" "$work"/v*.l2c "$testdata/llama2c-stories260K/stories260K.bin" <<'PY'
import os, struct, sys
for i, path in enumerate(sys.argv[2:]):
    open(f"{sys.argv[1]}/{i}", "wb").write(struct.pack("<Q", os.path.getsize(path)) + open(path, "rb").read(256))
PY
cp "$work/cb/meta.txt" "$out/custom_binary_meta/"
cp "$work/st/config.json" "$out/config_json/tiny.json"
cp "$testdata/hf-tiny-random-llama-2/config.json" "$out/config_json/hf.json"
cp "$work/f16.gguf" "$work/v0.l2c" "$work/v2.l2c" "$work/st/model.safetensors" "$testdata/pytorch-zip/candle_test.pt" \
   "$out/detect/"
# Tokenizers: llama2.c's tok512.bin, and stories260K as GGUF with that tokenizer embedded.
cp "$testdata/llama2c-stories260K/tok512.bin" "$out/tokenizer/"
"$cli" convert "$testdata/llama2c-stories260K/stories260K.bin" "$out/tokenizer/stories_tok.gguf" --to gguf --gguf-type f16 \
  --tokenizer "$testdata/llama2c-stories260K/tok512.bin" >/dev/null
