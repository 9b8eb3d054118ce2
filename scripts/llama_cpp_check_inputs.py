"""For scripts/llama-cpp-check.sh: the inputs of its rows for the tiny models of testdata/hf-tiny-arch
(run with Debian's interpreter; only `engine` needs the weightloader module on PYTHONPATH).

  ids REF.json N              the first N ids of the reference's first sequence, space-separated
  logits REF.json N           transformers' logits after them (position N - 1), one a line
  edit SRC DST KEY=JSON ...   SRC's model in DST: config.json with these keys set, model.safetensors linked
  repeat SRC DST LAYERS       SRC's layers repeated in order up to LAYERS layers (config.json and
                              model.safetensors written anew, the tensors' bytes as they are)
  restack SRC DST             SRC's experts stacked as transformers 5 writes them (tests/python/moe_layouts.py)
  qwen2moe SRC DST            Mixtral's SRC as a Qwen2-MoE: top-k not renormalised, a random shared expert
  engine MODEL ID ...         our engine's logits after the ids, one a line
  blocks DIR                  for each <type>.q / <type>.f32 that scripts/ggml_quantize_blocks.cpp wrote
                              (ggml's quantisation and its own dequantisation): the blocks in a GGUF
                              written by gguf-py, read by weightloader, compared bit for bit with ggml's
                              values and gguf-py's dequantize; a line per type, "ok" or what differs
  tiny FAMILY DST [KEY=JSON]  a tiny random model of a family the pinned transformers builds (olmo2,
                              granite; tests/python/test_families_gguf.py's, with these sizes set),
                              saved by it into DST; gpt_oss with mxfp4=true: its experts saved as
                              the released checkpoints store them, MXFP4 _blocks and _scales
                              (tests/python/test_families_gpt_oss.py's save_mxfp4)
"""
import json
import os
import re
import struct
import sys


def reference(path, n):
    ref = json.load(open(path))
    return ref["sequences"][0][:n], ref["logits"][0][n - 1]


def edit(src, dst, assignments):
    config = json.load(open(os.path.join(src, "config.json")))
    for a in assignments:
        key, value = a.split("=", 1)
        config[key] = json.loads(value)
    os.makedirs(dst, exist_ok=True)
    json.dump(config, open(os.path.join(dst, "config.json"), "w"), indent=1)
    os.symlink(os.path.abspath(os.path.join(src, "model.safetensors")), os.path.join(dst, "model.safetensors"))
    return config


def repeat(src, dst, layers):
    config = edit(src, dst, [f"num_hidden_layers={layers}"])
    os.remove(os.path.join(dst, "model.safetensors"))
    data = open(os.path.join(src, "model.safetensors"), "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    have = json.load(open(os.path.join(src, "config.json")))["num_hidden_layers"]
    out_header, chunks, offset = {}, [], 0
    for name, t in header.items():
        m = re.match(r"model\.layers\.(\d+)\.(.*)", name)
        copies = [name] if not m else [f"model.layers.{l}.{m.group(2)}" for l in range(int(m.group(1)), layers, have)]
        begin, end = t["data_offsets"]
        for copy in copies:
            out_header[copy] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [offset, offset + end - begin]}
            chunks.append(body[begin:end])
            offset += end - begin
    text = json.dumps(out_header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def rewrite(src, dst, change):
    """SRC's tensors and config.json through change(tensors, config) -> (tensors, config), into DST."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    from weightloader.safetensors.torch import load_file, save_file
    tensors, config = change(load_file(os.path.join(src, "model.safetensors")), json.load(open(os.path.join(src, "config.json"))))
    os.makedirs(dst, exist_ok=True)
    json.dump(config, open(os.path.join(dst, "config.json"), "w"), indent=1)
    save_file(tensors, os.path.join(dst, "model.safetensors"))


def restack(src, dst):
    def change(tensors, config):
        from moe_layouts import transformers5_layout
        return transformers5_layout(tensors, config["num_local_experts"]), config
    rewrite(src, dst, change)


def qwen2moe(src, dst):
    def change(tensors, config):
        from moe_layouts import qwen2_moe_from_mixtral
        return qwen2_moe_from_mixtral(tensors, config, norm_topk_prob=False, shared_seed=7)
    rewrite(src, dst, change)


def engine(model, ids):
    import weightloader
    out = weightloader.LLM(model).generate(ids, weightloader.SamplingParams(temperature=0, max_tokens=1), return_logits=True)
    return out[0].logits[len(ids) - 1]


def tiny(family, dst, assignments):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    from test_families_gguf import BUILDERS, FAMILIES
    from test_transformers5_configs import build
    cls, rope, sizes, _ = FAMILIES[family]
    sizes = {**sizes, **{a.split("=", 1)[0]: json.loads(a.split("=", 1)[1]) for a in assignments}}
    mxfp4 = sizes.pop("mxfp4", False)
    model = BUILDERS.get(family, build)(cls, rope, **sizes)
    if mxfp4:
        import pathlib
        from test_families_gpt_oss import save_mxfp4
        save_mxfp4(model, pathlib.Path(dst))
    else:
        model.save_pretrained(dst)


def blocks(folder):
    import numpy as np
    import gguf
    import weightloader
    failed = False
    for q in sorted(f for f in os.listdir(folder) if f.endswith(".q")):
        name = q[:-2]
        qtype = gguf.GGMLQuantizationType[name.upper()]
        ggml = np.fromfile(os.path.join(folder, name + ".f32"), dtype=np.float32).reshape(4, -1)
        raw = np.fromfile(os.path.join(folder, q), dtype=np.uint8).reshape(4, -1)
        path = os.path.join(folder, name + ".gguf")
        writer = gguf.GGUFWriter(path, "none")
        writer.add_tensor("blocks", raw, raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        with weightloader.safe_open(path, framework="np") as f:
            ours = f.get_tensor("blocks", dtype="f32")
        peers = [("ggml", ggml)]
        try:  # a type newer than the pinned gguf-py (Q1_0) is checked against ggml alone
            peers.append(("gguf-py", gguf.quants.dequantize(raw, qtype).reshape(ours.shape)))
        except NotImplementedError:
            pass
        differ = [who for who, want in peers if not np.array_equal(ours.view(np.uint32), want.view(np.uint32))]
        failed = failed or bool(differ)
        print(f"{name}{'' if len(peers) == 2 else ' (ggml only)'} {'ok' if not differ else 'differs from ' + ' and '.join(differ)}")
    return failed


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "ids":
        print(*reference(args[0], int(args[1]))[0])
    elif command == "logits":
        print(*reference(args[0], int(args[1]))[1], sep="\n")
    elif command == "edit":
        edit(args[0], args[1], args[2:])
    elif command == "repeat":
        repeat(args[0], args[1], int(args[2]))
    elif command == "restack":
        restack(args[0], args[1])
    elif command == "qwen2moe":
        qwen2moe(args[0], args[1])
    elif command == "blocks":
        sys.exit(1 if blocks(args[0]) else 0)
    elif command == "tiny":
        tiny(args[0], args[1], args[2:])
    elif command == "engine":
        print(*(f"{v:.9g}" for v in engine(args[0], [int(i) for i in args[1:]])), sep="\n")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
