"""The Python loaders users would pick instead of weightloader, each beside weightloader's equivalent,
for bench/run_all.py's peers group. One measurement in this fresh process; prints one JSON object:
seconds, bytes (of the tensors produced), peak_rss_bytes, rss_before_load_bytes, case, side.

Usage: PYTHONPATH=build/python build-deps/venv/bin/python bench/python_peers.py CASE PATH [SHAPES_JSON] [--ours]
       build-deps/venv/bin/python bench/python_peers.py --table DIR [--runs 3] [--build build] [--cases a,b,...]
                                                        [--preset 1gb]
--table: every row of ROWS on the checkpoints in DIR (made with the CLI when missing: st-f32/ and
st-bf16/ from `weightloader synth --preset 1gb`, bin-f32/pytorch_model.bin, q8_0.gguf, f16.gguf, and
random-<type>.gguf of random blocks for each GGML block type in BLOCK_TYPES, written by gguf-py;
--files picks file keys, e.g. `--cases gguf --files q4_k,q2_k,iq2_xxs`),
peer and weightloader alternating (which goes first alternates too), the page cache warmed before
each run, and prints a markdown table (medians, min..max, peak RSS). run_all.py's peers group
runs the same rows through pair().
  CASE          peer                                                   --ours (weightloader)
  load_file     safetensors.torch.load_file(path)                      weightloader.load_file(path)
  safe_open     safetensors.safe_open(path, "pt") + get_tensor(k)      weightloader.safe_open(path, "pt") + get_tensor(k)
  load_file_view, safe_open_view: the same without the copy (see the fair rule below)
  load_model    safetensors.torch.load_model(module, path)             weightloader.load_into(module, path)
  torch_bin     torch.load(bin, mmap=True, weights_only=True) +        weightloader.load_into(module, bin)
                module.load_state_dict(state, assign=True)
  fastsafetensors  SafeTensorsFileLoader(None, "cpu", nogds=True) +    weightloader.load_file(path, copy=True)
                copy_files_to_device() + get_tensor(k)
  runai         runai_model_streamer SafetensorsStreamer stream_files  weightloader.load_file(path, copy=True)
                + get_tensors()
  gguf          gguf.GGUFReader(path) + gguf.quants.dequantize(t.data,  weightloader.safe_open(path, "pt",
                t.tensor_type) of every tensor to float32                dtype="f32") + get_tensor(k)
  tensorizer    TensorDeserializer(model.tensors) + load_into_module    weightloader.load_into(module,
                (tensorizer's own serialization of the same module)     model.safetensors beside it)
  from_pretrained  transformers AutoModelForCausalLM.from_pretrained(   from_config under transformers'
                dir, dtype="auto"): the whole model, ready              no_init_weights + load_into(assign=True)
load_model, torch_bin and tensorizer need SHAPES_JSON (`weightloader inspect PATH --json`): the module
has the checkpoint's shapes and dtype, its memory from torch.empty (bench/torch_peer.py's module_for).
Rows are warm (the files in the page cache) or cold (evicted before each run: run_all.evict); the
runai row on s3-f32 streams the same file from the test S3 server (s3rver), both sides, by URL.

The fair rule: every byte ends up in fresh, private memory of this process, and is touched. Loaders
that hand back views of a file mapping (safetensors' load_file / get_tensor, weightloader's
zero-copy tensors, torch.load(mmap=True) + assign=True) get no free pass: in load_file and
safe_open every tensor is copied (t.clone()) on both sides; in torch_bin the assigned parameters are
cloned too (so the module owns its memory, as load_into's does). Loaders that already give fresh
memory (load_into, load_file(copy=True), fastsafetensors, Run:ai's owned tensors, dequantised GGUF) are
not copied again.
Two rows relax the rule to show the zero-copy paths themselves: load_file_view and safe_open_view
(views of the mapping on both sides, no copy). Afterwards every tensor is touched (one byte per 4 KiB page summed) on both sides, inside the timing.
"""
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PAGE = 4096


def touch(t):
    """Reads one byte of every page of t (a tensor or ndarray): its memory must really exist."""
    if isinstance(t, torch.Tensor):
        if t.numel() == 0:
            return 0
        b = t.reshape(-1).view(torch.uint8)
        return int(b[::PAGE].sum())
    import numpy as np
    b = np.ascontiguousarray(t).reshape(-1).view(np.uint8)
    return int(b[::PAGE].sum())


def nbytes(t):
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else t.nbytes


def shapes_module(shapes_json):
    from torch_peer import module_for
    import weightloader.dtypes as wdt
    with open(shapes_json) as f:
        tensors = json.load(f)["tensors"]
    dtypes = {t.get("dtype") for t in tensors}
    dtype = wdt.to_torch(dtypes.pop()) if len(dtypes) == 1 and None not in dtypes else None
    return module_for({t["name"]: tuple(t["shape"]) for t in tensors}, dtype=dtype)


def case_load_file(path, ours, _):
    if ours:
        import weightloader
        state = weightloader.load_file(path)
    else:
        from safetensors.torch import load_file
        state = load_file(path)
    return {k: v.clone() for k, v in state.items()}


def case_safe_open(path, ours, _):
    if ours:
        from weightloader import safe_open
    else:
        from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k).clone() for k in f.keys()}


def case_load_file_view(path, ours, _):
    """load_file as it comes: both sides give views of a file mapping (zero-copy); only touched."""
    if ours:
        import weightloader
        return weightloader.load_file(path)
    from safetensors.torch import load_file
    return load_file(path)


def case_safe_open_view(path, ours, _):
    if ours:
        from weightloader import safe_open
    else:
        from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def case_load_model(path, ours, module):
    if ours:
        import weightloader
        weightloader.load_into(module, path, progress=False)
    else:
        from safetensors.torch import load_model
        load_model(module, path)
    return dict(module.state_dict())


def case_torch_bin(path, ours, module):
    if ours:
        import weightloader
        weightloader.load_into(module, path, progress=False)
    else:
        state = torch.load(path, mmap=True, weights_only=True, map_location="cpu")
        module.load_state_dict(state, assign=True)
        del state
        # assign=True leaves the parameters as views of the file's mapping: own the memory
        for mod in module.modules():
            for name, p in list(mod._parameters.items()):
                if p is not None:
                    mod._parameters[name] = torch.nn.Parameter(p.detach().clone(), requires_grad=False)
    return dict(module.state_dict())


def ours_load_file_fresh(path):
    """weightloader.load_file(copy=True): every tensor in fresh memory of its own (the fair rule), read
    in one batch of the I/O engine, as the peers of these rows hand back memory of their own."""
    import weightloader
    return weightloader.load_file(path, copy=True)


def case_fastsafetensors(path, ours, _):
    if ours:
        return ours_load_file_fresh(path)
    from fastsafetensors import SafeTensorsFileLoader
    loader = SafeTensorsFileLoader(None, "cpu", nogds=True)
    loader.add_filenames({0: [path]})
    fb = loader.copy_files_to_device()
    out = {k: fb.get_tensor(k) for k in loader.get_keys()}
    case_fastsafetensors.keep = (loader, fb)  # the buffers must outlive the touch
    return out


def case_runai(path, ours, _):
    """Run:ai at its own default concurrency: RUNAI_STREAMER_CONCURRENCY 1, 2, 4, 8 and 16 were each
    slower here (README, "Beside the Python loaders")."""
    if ours:
        return ours_load_file_fresh(path)
    from runai_model_streamer import SafetensorsStreamer
    out = {}
    with SafetensorsStreamer() as s:
        s.stream_files([path])
        for name, t in s.get_tensors():
            out[name] = t
    return out


def case_tensorizer(path, ours, module):
    """path: tensorizer's serialization of the module (DIR.tensors beside the checkpoint folder DIR);
    ours reads DIR/model.safetensors into the same module."""
    if ours:
        import weightloader
        weightloader.load_into(module, safetensors_of_tensorizer(path), progress=False)
    else:
        from tensorizer import TensorDeserializer
        with TensorDeserializer(path, num_readers=TENSORIZER_READERS) as d:
            d.load_into_module(module)
    return dict(module.state_dict())


TENSORIZER_READERS = 2  # its best on this 2-core machine (1, 2 and 4 tried; its default is 1 on CPU)


def case_from_pretrained(path, ours, _):
    """path: a model directory; the whole model built and filled, ready to run, in its config's dtype.
    Ours builds it as from_pretrained does before loading (no weight initialisation, torch.empty
    memory) and lets load_into replace every parameter (assign=True)."""
    import transformers
    if not ours:
        model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype="auto")
    else:
        import weightloader
        from transformers import initialization
        config = transformers.AutoConfig.from_pretrained(path)
        with initialization.no_init_weights():
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=config.dtype)
        weightloader.load_into(model, path, assign=True, progress=False)
    return dict(model.state_dict())


def case_gguf(path, ours, _):
    if ours:
        from weightloader import safe_open
        with safe_open(path, framework="pt", dtype="f32") as f:
            return {k: f.get_tensor(k) for k in f.keys()}
    import numpy as np
    import gguf
    reader = gguf.GGUFReader(path)
    out = {}
    for t in reader.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = a if a.dtype == np.float32 else a.astype(np.float32)
    return out


PEER_MODULES = {"load_file": "safetensors.torch", "safe_open": "safetensors", "load_file_view": "safetensors.torch",
                "safe_open_view": "safetensors", "load_model": "safetensors.torch",
                "torch_bin": "torch", "fastsafetensors": "fastsafetensors", "runai": "runai_model_streamer",
                "gguf": "gguf.quants", "tensorizer": "tensorizer", "from_pretrained": "transformers"}
OURS_MODULES = {"from_pretrained": "transformers"}  # what weightloader's side calls besides weightloader
MODULE_CASES = ("load_model", "torch_bin", "tensorizer")  # the cases that fill a module of SHAPES_JSON
CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


# (case, file key, warm or cold, label of the peer, label of weightloader's side); file keys: see files_in()
ROWS = [
    ("load_file", "st-f32", "warm", "safetensors.torch.load_file + clone", "weightloader.load_file + clone"),
    ("load_file", "st-bf16", "warm", "safetensors.torch.load_file + clone", "weightloader.load_file + clone"),
    ("load_file", "st-f32", "cold", "safetensors.torch.load_file + clone", "weightloader.load_file + clone"),
    ("safe_open", "st-f32", "warm", "safetensors.safe_open + get_tensor + clone", "weightloader.safe_open + get_tensor + clone"),
    ("safe_open", "st-bf16", "warm", "safetensors.safe_open + get_tensor + clone", "weightloader.safe_open + get_tensor + clone"),
    ("load_file_view", "st-f32", "warm", "safetensors.torch.load_file (mmap views, touched)", "weightloader.load_file (zero-copy views, touched)"),
    ("safe_open_view", "st-f32", "warm", "safetensors.safe_open + get_tensor (views, touched)", "weightloader.safe_open + get_tensor (zero-copy, touched)"),
    ("load_model", "st-f32", "warm", "safetensors.torch.load_model(module)", "weightloader.load_into(module)"),
    ("load_model", "st-bf16", "warm", "safetensors.torch.load_model(module)", "weightloader.load_into(module)"),
    ("load_model", "st-f32", "cold", "safetensors.torch.load_model(module)", "weightloader.load_into(module)"),
    ("torch_bin", "bin-f32", "warm", "torch.load(mmap) + load_state_dict(assign) + clone", "weightloader.load_into(module, .bin)"),
    ("torch_bin", "bin-f32", "cold", "torch.load(mmap) + load_state_dict(assign) + clone", "weightloader.load_into(module, .bin)"),
    ("fastsafetensors", "st-f32", "warm", "fastsafetensors SafeTensorsFileLoader (CPU, nogds)", "weightloader.load_file(copy=True)"),
    ("fastsafetensors", "st-f32", "cold", "fastsafetensors SafeTensorsFileLoader (CPU, nogds)", "weightloader.load_file(copy=True)"),
    ("runai", "st-f32", "warm", "Run:ai SafetensorsStreamer", "weightloader.load_file(copy=True)"),
    ("runai", "st-f32", "cold", "Run:ai SafetensorsStreamer", "weightloader.load_file(copy=True)"),
    ("runai", "s3-f32", "warm", "Run:ai SafetensorsStreamer from S3 (s3rver)", "weightloader.load_file(s3://, copy=True)"),
    ("tensorizer", "tz-f32", "warm", "tensorizer TensorDeserializer.load_into_module", "weightloader.load_into(module, safetensors)"),
    ("tensorizer", "tz-f32", "cold", "tensorizer TensorDeserializer.load_into_module", "weightloader.load_into(module, safetensors)"),
    ("from_pretrained", "dir-f32", "warm", "transformers from_pretrained", "from_config(no_init_weights) + load_into"),
    ("from_pretrained", "dir-bf16", "warm", "transformers from_pretrained", "from_config(no_init_weights) + load_into"),
    ("from_pretrained", "dir-f32", "cold", "transformers from_pretrained", "from_config(no_init_weights) + load_into"),
    ("gguf", "q8_0", "warm", "gguf.GGUFReader + dequantize to F32", "weightloader.safe_open(dtype=f32)"),
    ("gguf", "f16", "warm", "gguf.GGUFReader + dequantize to F32", "weightloader.safe_open(dtype=f32)"),
]
# Every other GGML block type both sides decode: a GGUF of random blocks of the type (scales made
# finite; 16 Mi elements, written by gguf-py since `convert` writes none of them), so each is
# measured against gguf-py and (the "vs our Q4_K" column of --table) against weightloader's own Q4_K.
BLOCK_TYPES = ["q4_k", "q2_k", "q3_k", "q5_k", "q6_k", "tq1_0", "tq2_0", "iq4_nl", "iq4_xs", "mxfp4", "nvfp4",
               "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m"]
ROWS += [("gguf", t, "warm", "gguf.GGUFReader + dequantize to F32", "weightloader.safe_open(dtype=f32)") for t in BLOCK_TYPES]


def random_block_gguf(path, type_name, rows=16, cols=1 << 20):
    """A GGUF of `rows` tensors [1, cols] of random blocks of a GGML type, written by gguf-py, every
    scale field made finite (the byte offsets as ggml-common.h lays each block out)."""
    import numpy as np
    import gguf
    qtype = gguf.GGMLQuantizationType[type_name.upper()]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    f16_fields = {"Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,), "Q2_K": (80, 82), "Q3_K": (108,), "TQ1_0": (52,),
                  "TQ2_0": (64,), "IQ4_NL": (0,), "IQ4_XS": (0,), "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,),
                  "IQ3_XXS": (0,), "IQ3_S": (0,), "IQ1_S": (0,)}
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "bench")
    for r in range(rows):
        n = cols // block
        raw = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
        for at in f16_fields.get(qtype.name, ()):
            raw[:, at:at + 2] = (rng.standard_normal((n, 1)) * 0.05).astype(np.float16).view(np.uint8)
        if qtype.name == "MXFP4":
            raw[:, 0] = rng.integers(100, 150, size=n, dtype=np.uint8)
        if qtype.name == "IQ1_M":  # the f16 d is the top nibbles of the four u16 scale words
            d = (rng.standard_normal(n) * 0.05).astype(np.float16).view(np.uint16)
            words = raw[:, 48:56].copy().view(np.uint16)
            for k in range(4):
                words[:, k] = (words[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
            raw[:, 48:56] = words.view(np.uint8)
        writer.add_tensor(f"t{r}", raw.reshape(1, n * size), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


FILE_DTYPE = {"st-f32": "F32", "st-bf16": "BF16", "bin-f32": "F32 .bin", "q8_0": "GGUF Q8_0", "f16": "GGUF F16",
              "tz-f32": "F32", "dir-f32": "F32 Llama dir", "dir-bf16": "BF16 Llama dir", "s3-f32": "F32 on S3",
              **{t: f"GGUF {t.upper()}" for t in BLOCK_TYPES}}


def safetensors_of_tensorizer(path):
    return os.path.join(path[:-len(".tensors")], "model.safetensors")


def derived_files(files, shapes_of):
    """files ({key: path} with st-f32 and st-bf16) with the keys derived from them: tz-f32 (tensorizer's
    serialization of the st-f32 module, written once beside its folder), dir-f32 and dir-bf16 (the
    folders)."""
    st = files["st-f32"]
    tz = os.path.dirname(st) + ".tensors"
    if not os.path.exists(tz):  # in a child: the peak RSS the rows report is inherited through fork
        import subprocess
        subprocess.run([sys.executable, os.path.abspath(__file__), "--make-tensorizer", st, shapes_of(st), tz], check=True)
    return {**files, "tz-f32": tz, "dir-f32": os.path.dirname(st), "dir-bf16": os.path.dirname(files["st-bf16"])}


class S3Copy:
    """The st-f32 file served by s3rver (the tests' launcher) while the with-block runs: .url, .env."""

    def __init__(self, path, workdir):
        self.path, self.workdir, self.server = path, workdir, None

    def __enter__(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="s3rver-", dir=self.workdir)  # a fresh bucket each time
        self.server = remote_servers().S3rver(self.tmp).start()
        try:
            self.url = self.server.put("model.safetensors", self.path)
        except BaseException:
            self.__exit__()
            raise
        # Run:ai's S3 client: path-style addressing on a local endpoint, no instance metadata lookups
        self.env = {**self.server.env(), "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0", "AWS_EC2_METADATA_DISABLED": "true"}
        return self

    def __exit__(self, *exc):
        import shutil
        self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def remote_servers():
    """The tests' server launchers (tests/python/remote_servers.py)."""
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import remote_servers as module
    return module


def s3_available():
    return remote_servers().s3rver_command() is not None


def files_in(d, wl, keys=None, preset="1gb"):
    """{file key: checkpoint path} in d, each made with the CLI `wl` (`synth --preset`; gguf-py for
    BLOCK_TYPES) when missing; only `keys` (all when None) and what they derive from."""
    import subprocess
    paths = {"st-f32": os.path.join(d, "st-f32", "model.safetensors"),
             "st-bf16": os.path.join(d, "st-bf16", "model.safetensors"),
             "bin-f32": os.path.join(d, "bin-f32", "pytorch_model.bin"),
             "q8_0": os.path.join(d, "q8_0.gguf"), "f16": os.path.join(d, "f16.gguf")}
    if keys is not None and not (set(keys) - set(BLOCK_TYPES)):
        paths = {}  # only GGML block types: none of the checkpoints made with the CLI
    for t in BLOCK_TYPES:
        if keys is None or t in keys:
            paths[t] = os.path.join(d, f"random-{t}.gguf")
            if not os.path.exists(paths[t]):
                random_block_gguf(paths[t], t)
    for key, dtype in (("st-f32", "f32"), ("st-bf16", "bf16")):
        if key in paths and not os.path.exists(paths[key]):
            subprocess.run([wl, "synth", os.path.dirname(paths[key]), "--preset", preset, "--dtype", dtype], check=True)
    if "bin-f32" in paths and not os.path.exists(paths["bin-f32"]):
        from safetensors.torch import load_file
        os.makedirs(os.path.dirname(paths["bin-f32"]), exist_ok=True)
        torch.save({k: v.clone() for k, v in load_file(paths["st-f32"]).items()}, paths["bin-f32"])
    for key in ("q8_0", "f16"):
        if key in paths and not os.path.exists(paths[key]):
            subprocess.run([wl, "convert", paths["st-f32"], paths[key], "--gguf-type", key, "--no-tokenizer", "-q"],
                           check=True)
    return derived_files(paths, lambda path: shapes_of(path, wl)) if "st-f32" in paths else paths


def shapes_of(path, wl):
    """`weightloader inspect PATH --json`, kept beside the file as PATH.shapes.json."""
    import subprocess
    shapes = path + ".shapes.json"
    if not os.path.exists(shapes):
        out = subprocess.run([wl, "inspect", path, "--json"], check=True, capture_output=True, text=True).stdout
        with open(shapes + ".partial", "w") as f:
            f.write(out)
        os.replace(shapes + ".partial", shapes)
    return shapes


def run_rows(files, runs, warm, evict, wl, workdir, env=None, wanted=None, rows=ROWS):
    """Every row of `rows` (those whose case is in `wanted`, when given) on `files` (files_in's keys),
    by pair(); yields (row, peer reports, weightloader reports). The s3-f32 rows serve st-f32 from
    s3rver while they run (skipped, saying so, without s3rver)."""
    env = dict(env or os.environ)
    s3 = None
    try:
        for row in rows:
            case, key, state = row[:3]
            if wanted and case not in wanted:
                continue
            path = files.get(key)
            run_env, prepare = env, (evict if state == "cold" else warm)
            if key == "s3-f32":
                if not s3_available():
                    print(f"python_peers: {case} on S3 skipped: s3rver is not installed", file=sys.stderr)
                    continue
                s3 = s3 or S3Copy(files["st-f32"], workdir).__enter__()
                path, run_env, prepare = s3.url, {**env, **s3.env}, (lambda _: None)  # the server's own cache
            if key == "tz-f32":  # not a checkpoint weightloader reads: its bytes warmed or evicted directly
                import run_all
                raw = run_all.evict if state == "cold" else run_all.read_through
                prepare = lambda p, both=prepare: (raw(p), both(safetensors_of_tensorizer(p)))
            shapes = shapes_of(files["st-f32"] if key == "tz-f32" else path, wl) if case in MODULE_CASES else None
            peer, ours = pair(case, path, shapes, runs, prepare, run_env)
            yield row, peer, ours
    finally:
        if s3:
            s3.__exit__(None, None, None)


def pair(case, path, shapes, runs, warm, env=None, python=sys.executable):
    """The peer and weightloader on one file, `runs` times each, alternating (the first of each pair
    alternating too), warm(path) before every run. Returns ([peer reports], [weightloader reports])."""
    import subprocess
    script = [python, os.path.abspath(__file__), case, path] + ([shapes] if case in MODULE_CASES else [])
    peer, ours = [], []
    for i in range(runs):
        for side in ((False, True) if i % 2 == 0 else (True, False)):
            warm(path)
            r = subprocess.run(script + (["--ours"] if side else []), env=env, text=True, capture_output=True)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(script)}{' --ours' if side else ''} failed ({r.returncode}):\n{r.stderr[-2000:]}")
            out = r.stdout.strip()
            (ours if side else peer).append(json.loads(out[out.rindex("{"):]))
    return peer, ours


def summary(reports):
    import statistics
    s = [r["seconds"] for r in reports]
    return statistics.median(s), min(s), max(s), max(r["peak_rss_bytes"] for r in reports)


def warm_simple(path, wl=None):
    """Reads the file (or the folder's files) through until the page cache holds it (by
    `weightloader inspect --residency`)."""
    import subprocess
    from run_all import read_through
    for _ in range(3):
        read_through(path)
        if not wl:
            return
        rep = json.loads(subprocess.run([wl, "inspect", path, "--residency", "--json"], capture_output=True,
                                        text=True).stdout)
        if all(f["size"] - (f["resident_bytes"] or 0) <= 4096 for f in rep["files"]):
            return


def table_main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build"))
    ap.add_argument("--cases", default="")
    ap.add_argument("--preset", default="1gb", help="synth preset of the checkpoints made when missing")
    ap.add_argument("--files", default="", help="only these file keys (e.g. q4_k,q2_k,iq2_xxs)")
    a = ap.parse_args(argv)
    wl = os.path.join(a.build, "weightloader")
    wanted = set(a.cases.split(",")) if a.cases else None
    keys = set(a.files.split(",")) if a.files else None
    rows = [r for r in ROWS if (not wanted or r[0] in wanted) and (not keys or r[1] in keys)]
    files = files_in(a.table, wl, {r[1] for r in rows})
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    lines = ["| case | file | peer | peer median s (min..max) | weightloader | weightloader median s (min..max) "
             "| peer / weightloader time | peer peak RSS | weightloader peak RSS | weightloader time / its Q4_K |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    from run_all import evict
    q4_k = None  # weightloader's median on the Q4_K file, when that row ran
    for (case, key, state, plabel, olabel), peer, ours in run_rows(files, a.runs, lambda p: warm_simple(p, wl), evict,
                                                                  wl, a.table, env, rows=rows):
        pm, plo, phi, prss = summary(peer)
        om, olo, ohi, orss = summary(ours)
        if key == "q4_k":
            q4_k = om
        vs_q4_k = f"{om / q4_k:.2f}" if q4_k and key in BLOCK_TYPES else ""
        lines.append(f"| {case} | {FILE_DTYPE[key]} {state} | {plabel} | {pm:.3f} ({plo:.3f}..{phi:.3f}) | {olabel} | "
                     f"{om:.3f} ({olo:.3f}..{ohi:.3f}) | {pm / om:.2f}x | {prss / 1e9:.2f} GB | {orss / 1e9:.2f} GB | {vs_q4_k} |")
        print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))


def make_tensorizer(st, shapes, tz):
    """tensorizer's serialization of the module of `shapes` filled from the safetensors file `st`."""
    from safetensors.torch import load_file
    from tensorizer import TensorSerializer
    module = shapes_module(shapes)
    module.load_state_dict(load_file(st))
    serializer = TensorSerializer(tz + ".partial")
    serializer.write_module(module)
    serializer.close()
    os.replace(tz + ".partial", tz)


def main():
    if "--table" in sys.argv[1:]:
        return table_main(sys.argv[1:])
    if sys.argv[1:2] == ["--make-tensorizer"]:
        return make_tensorizer(*sys.argv[2:5])
    args = [a for a in sys.argv[1:] if a != "--ours"]
    ours = "--ours" in sys.argv[1:]
    if len(args) < 2 or args[0] not in CASES:
        sys.exit(__doc__)
    case, path = args[0], args[1]
    module = shapes_module(args[2]) if case in MODULE_CASES else None
    # Import every library before the clock starts (a program has them loaded before it loads weights).
    import weightloader  # noqa: F401
    __import__(PEER_MODULES[case] if not ours else OURS_MODULES.get(case, "weightloader"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    tensors = CASES[case](path, ours, module)
    checksum = sum(touch(t) for t in tensors.values())
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"case": case, "side": "weightloader" if ours else "peer", "seconds": seconds,
                      "bytes": sum(nbytes(t) for t in tensors.values()), "tensors": len(tensors),
                      "peak_rss_bytes": rss, "rss_before_load_bytes": before, "touch_checksum": checksum}))


if __name__ == "__main__":
    main()
