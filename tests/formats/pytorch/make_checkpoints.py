"""Writes PyTorch checkpoints with torch (and hand-made variants of them) into OUT_DIR, plus
OUT_DIR/manifest.json saying what a reader must make of each one:

  {"reads":  [{"file", "key", "metadata": {..}, "tensors": [{"name", "dtype", "shape", "hex"}]}],
   "errors": [{"file", "key", "code", "contains": [..]}],
   "sharded": {"index", "tensors": [...]},
   "marker": path that a pickle that got executed would create}

"hex" is the tensor's logical value, row-major, as little-endian bytes. Run by the C++ tests
(tests/formats/pytorch/interop_test.cpp) with the project's Python environment (build-deps/venv); exits 77 without torch.
"""
import io
import json
import os
import pickle
import sys
import zipfile

try:
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means "skip"
    print(f"cannot import torch: {e}")
    sys.exit(77)

assert sys.byteorder == "little", "expected values are written as this machine's bytes"

OUT = sys.argv[1]
MARKER = os.path.join(OUT, "pwned")
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL"}
manifest = {"reads": [], "errors": [], "marker": MARKER}


def path(name):
    return os.path.join(OUT, name)


def raw(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes().hex()


def describe(tensors):
    return [{"name": n, "dtype": DTYPES[t.dtype], "shape": list(t.shape), "hex": raw(t)} for n, t in tensors]


def expect(name, tensors, key="", metadata=None):
    manifest["reads"].append({"file": name, "key": key, "metadata": metadata or {}, "tensors": describe(tensors)})


def expect_error(name, code, contains=(), key=""):
    manifest["errors"].append({"file": name, "key": key, "code": code, "contains": list(contains)})


def rezip(src, dst, transform=lambda name, data: data, compression=zipfile.ZIP_STORED):
    """Copies the zip `src` entry by entry into `dst`, passing each entry's bytes through `transform`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=compression) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, transform(info.filename, zin.read(info.filename)), compress_type=compression)


def storage_types(ckpt):
    """Storage key -> dtype, from the persistent ids in a checkpoint's data.pkl."""
    found = {}

    class Collect(pickle.Unpickler):
        def persistent_load(self, pid):
            _, storage_type, key, _, numel = pid
            found[key] = storage_type.dtype
            return torch.empty(numel, dtype=storage_type.dtype).storage()

    with zipfile.ZipFile(ckpt) as z:
        Collect(io.BytesIO(z.read(next(n for n in z.namelist() if n.endswith("/data.pkl"))))).load()
    return found


g = torch.Generator().manual_seed(1234)

# Every dtype torch.save writes, with the special float values.
special = torch.tensor([0.0, -0.0, 1.0, -2.5, float("inf"), float("-inf"), float("nan"), 1e-40, 65504.0, 3.0e38])
all_dtypes = {
    "f32": torch.cat([special, torch.randn(14, generator=g)]).reshape(4, 6),
    "f64": torch.randn(3, 5, generator=g, dtype=torch.float64) * 1e200,
    "f16": torch.cat([special.half(), torch.randn(6, generator=g).half()]).reshape(2, 8),
    "bf16": torch.cat([special.bfloat16(), torch.randn(6, generator=g).bfloat16()]).reshape(16),
    "i64": torch.tensor([-(2**63), 2**63 - 1, 0, -1, 123456789012345]),
    "i32": torch.randint(-2**31, 2**31 - 1, (3, 3), generator=g, dtype=torch.int32),
    "i16": torch.randint(-2**15, 2**15 - 1, (7,), generator=g, dtype=torch.int16),
    "i8": torch.randint(-128, 127, (2, 2, 2), generator=g, dtype=torch.int8),
    "u8": torch.randint(0, 255, (9,), generator=g, dtype=torch.uint8),
    "bool": torch.tensor([[True, False, True], [False, False, True]]),
}
torch.save(all_dtypes, path("all_dtypes.pt"))
expect("all_dtypes.pt", all_dtypes.items())

# Views of one storage: offsets, transposes, steps, expansion (stride 0), rank 0, empty.
base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
cube = torch.arange(24, dtype=torch.int64).reshape(2, 3, 4)
halves = torch.randn(4, 6, generator=g).bfloat16()
views = {
    "base": base,
    "rows": base[2:4],
    "column": base[:, 3],
    "transposed": base.t(),
    "stepped": base[1::2, 2::3],
    "element": base[4, 7],
    "tail": base.view(-1)[53:],
    "empty": base[3:3],
    "expanded": torch.arange(3, dtype=torch.float32).expand(4, 3),
    "permuted": cube.permute(2, 0, 1),
    "cube_slice": cube[1],
    "bf16_t": halves.t(),
    "scalar": torch.tensor(3.25, dtype=torch.float64),
}
torch.save(views, path("views.pt"))
expect("views.pt", views.items())

# A module's own state_dict(): an OrderedDict whose _metadata attribute is pickled with BUILD.
net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2).half())
torch.save(net.state_dict(), path("module_state_dict.pt"))
expect("module_state_dict.pt", net.state_dict().items())

# A training checkpoint: the state dict under a key, beside an optimizer, numbers, strings and
# an int beyond 64 bits; a nested dict and an nn.Parameter inside the state dict.
lin = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
lin(torch.ones(1, 3)).sum().backward()
opt.step()
state = {"encoder": {"weight": lin.weight, "bias": lin.bias.detach().clone()}, "head.weight": torch.eye(2)}
training = {"epoch": 7, "model_state_dict": state, "optimizer": opt.state_dict(), "note": "hello", "lr": 0.1,
            "seed": 2**70, "shape": (1, None, True)}
torch.save(training, path("training.pt"))
flat = [("encoder.weight", lin.weight), ("encoder.bias", state["encoder"]["bias"]), ("head.weight", state["head.weight"])]
expect("training.pt", flat, metadata={"pytorch.state_dict_key": "model_state_dict"})
expect("training.pt", flat, key="model_state_dict", metadata={"pytorch.state_dict_key": "model_state_dict"})
expect_error("training.pt", "StateDictNotFound", ["'optimizer'", "dict"], key="missing")

# Two state dicts side by side: ambiguous unless a key is given.
ema = {"weight": torch.full((2, 2), 0.5), "bias": torch.zeros(2)}
torch.save({"model": {"weight": torch.ones(2, 2)}, "ema": ema, "step": 3}, path("two_models.pt"))
expect_error("two_models.pt", "StateDictAmbiguous", ["'model'", "'ema'"])
expect("two_models.pt", ema.items(), key="ema", metadata={"pytorch.state_dict_key": "ema"})

# Higher pickle protocols (FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL, sets).
for proto in (3, 4, 5):
    name = f"protocol{proto}.pt"
    torch.save({"state_dict": views, "tags": {"a", "b"}, "frozen": frozenset({1, 2}), "blob": b"\x00\x01"},
               path(name), pickle_protocol=proto)
    expect(name, views.items(), metadata={"pytorch.state_dict_key": "state_dict"})

# ZIP64 throughout: zip64 extra fields in local and central headers, a ZIP64 end record.
saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 0, 0
try:
    with zipfile.ZipFile(path("views.pt")) as zin, zipfile.ZipFile(path("zip64.pt"), "w") as zout:
        for info in zin.infolist():
            with zout.open(info.filename, "w", force_zip64=True) as f:
                f.write(zin.read(info.filename))
finally:
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved
with open(path("zip64.pt"), "rb") as f:
    assert b"PK\x06\x06" in f.read(), "zip64.pt has no ZIP64 end record"
assert all(torch.equal(a, b) for a, b in zip(torch.load(path("zip64.pt")).values(), views.values()))
expect("zip64.pt", views.items())

# Big-endian storages (as written on s390x): bytes swapped per element, byteorder "big".
sizes = {k: torch.empty(0, dtype=dt).element_size() for k, dt in storage_types(path("all_dtypes.pt")).items()}


def to_big(name, data):
    if name.endswith("/byteorder"):
        return b"big"
    parts = name.split("/")
    if len(parts) == 3 and parts[1] == "data":
        n = sizes[parts[2]]
        return b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
    return data


def add_byteorder(src, dst, transform):
    rezip(src, dst, transform)
    with zipfile.ZipFile(dst) as z:
        top = z.namelist()[0].split("/")[0]
        has = any(n.endswith("/byteorder") for n in z.namelist())
    if not has:  # torch before 2.0 writes no byteorder entry
        with zipfile.ZipFile(dst, "a") as z:
            z.writestr(f"{top}/byteorder", b"big")


add_byteorder(path("all_dtypes.pt"), path("big_endian.pt"), to_big)
expect("big_endian.pt", all_dtypes.items())
torch.save({"t": base.t()}, path("little_strided.pt"))
sizes.update({k: torch.empty(0, dtype=dt).element_size() for k, dt in storage_types(path("little_strided.pt")).items()})
add_byteorder(path("little_strided.pt"), path("big_endian_strided.pt"), to_big)
expect_error("big_endian_strided.pt", "UnsupportedLayout", ["big-endian"])

# Sharded, as transformers writes pytorch_model-0000k-of-0000n.bin with an index.
shards = [{"a.weight": torch.randn(2, 3, generator=g), "a.bias": torch.randn(2, generator=g)},
          {"b.weight": torch.randn(3, 3, generator=g).half()}]
os.makedirs(path("sharded"))
weight_map = {}
for i, shard in enumerate(shards):
    fname = f"pytorch_model-{i + 1:05d}-of-{len(shards):05d}.bin"
    torch.save(shard, os.path.join(OUT, "sharded", fname))
    weight_map.update({k: fname for k in shard})
with open(path("sharded/pytorch_model.bin.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": 46}, "weight_map": weight_map}, f)
manifest["sharded"] = {"index": "sharded/pytorch_model.bin.index.json",
                       "tensors": describe([kv for s in shards for kv in s.items()])}

# Refused: compressed entries, legacy formats, pickles that would run code.
rezip(path("views.pt"), path("deflated.pt"), compression=zipfile.ZIP_DEFLATED)
expect_error("deflated.pt", "ZipEntryCompressed", ["compressed"])
torch.save(views, path("legacy.pt"), _use_new_zipfile_serialization=False)
expect_error("legacy.pt", "LegacyFormat", ["legacy", "torch.save"])
torch.save(torch.nn.Linear(2, 2), path("module.pt"))
expect_error("module.pt", "PickleGlobalNotAllowed", ["torch.nn.modules.linear.Linear"])


class RunsShell:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


class RunsEval:
    def __reduce__(self):
        return (eval, (f"__import__('os').system('touch {MARKER}')",))


torch.save({"w": torch.ones(2), "x": RunsShell()}, path("evil_system.pt"))
expect_error("evil_system.pt", "PickleGlobalNotAllowed", [f"{os.system.__module__}.system", "not executed"])
torch.save({"w": torch.ones(2), "x": RunsEval()}, path("evil_eval.pt"), pickle_protocol=4)
expect_error("evil_eval.pt", "PickleGlobalNotAllowed", ["builtins.eval"])
# Written by hand: GLOBAL os.system called on a string, in a well-formed checkpoint zip.
evil = b"\x80\x02cos\nsystem\nX" + len(f"touch {MARKER}").to_bytes(4, "little") + f"touch {MARKER}".encode() + b"\x85R."
with zipfile.ZipFile(path("evil_handmade.pt"), "w") as z:
    z.writestr("archive/data.pkl", evil)
    z.writestr("archive/version", b"3\n")
expect_error("evil_handmade.pt", "PickleGlobalNotAllowed", ["os.system"])

with open(path("manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
