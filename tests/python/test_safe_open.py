"""weightloader.safe_open: the safetensors drop-in (safe_open, load_file, load, save_file, save)
over every format weightloader reads, zero-copy where the stored bytes allow it."""
import concurrent.futures
import gc
import json
import os
import random
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import weightloader as wl
from weightloader.safe_open import (TensorNotFoundError, UnknownFormatError, load, load_file, safe_open, save,
                                    save_file)

REPO = Path(__file__).resolve().parents[2]
TESTDATA = Path(os.environ.get("WL_TESTDATA_DIR") or REPO.parent / "shared" / "testdata")
TINY_LLAMA = TESTDATA / "hf-tiny-random-llama-2"
STORIES = TESTDATA / "llama2c-stories260K" / "stories260K.bin"
VECTORS = TESTDATA / "safetensors-vectors"
PTZIP = TESTDATA / "pytorch-zip"
CLI = Path(os.environ.get("WL_CLI") or REPO / "build" / "weightloader")

needs_testdata = pytest.mark.skipif(not TESTDATA.is_dir(), reason=f"shared test data not found at {TESTDATA}")
needs_cli = pytest.mark.skipif(not CLI.is_file() or not STORIES.is_file(),
                               reason=f"the weightloader CLI ({CLI}) or stories260K is missing")


# --- independent writers and readers (plain Python, no weightloader code) ---

def parse_safetensors(path):
    """(header dict, data-section bytes) of a safetensors file."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_safetensors_raw(path, tensors, metadata=None):
    """tensors: {name: (dtype, shape, bytes)} in the order given."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, b) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + data)


GGML_F32, GGML_F16, GGML_Q8_0, GGML_I32 = 0, 1, 8, 26


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def quantize_q8_0(x):
    """ggml's Q8_0 blocks of x (float32, size a multiple of 32) and their exact dequantised values."""
    blocks = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(blocks).max(axis=1)
    d = amax / 127.0
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0.0)
    q = np.round(blocks * inv[:, None]).astype(np.int8)
    d16 = d.astype(np.float16)
    raw = b"".join(d16[i:i + 1].tobytes() + q[i].tobytes() for i in range(len(q)))
    return raw, (d16.astype(np.float32)[:, None] * q.astype(np.float32)).reshape(x.shape)


def write_gguf(path, tensors, metadata=(), alignment=32):
    """A GGUF v3 file. tensors: [(name, ggml type, PyTorch shape, bytes)]; metadata: [(key, str value)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata) + 1)
    for key, value in [("general.architecture", "test"), *metadata]:
        out += gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)
    data = b""
    for name, ggml_type, shape, b in tensors:
        data += b"\0" * ((alignment - len(data) % alignment) % alignment)  # none after the last tensor
        out += gguf_string(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *reversed(shape))
        out += struct.pack("<IQ", ggml_type, len(data))
        data += b
    out += b"\0" * ((alignment - len(out) % alignment) % alignment)
    Path(path).write_bytes(out + data)


def hf_permute(w, n_heads):
    """Meta's interleaved rotary rows to Hugging Face's layout (transformers' convert script)."""
    rows, cols = w.shape
    return w.reshape(n_heads, rows // n_heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def as_bits(t):
    """A tensor's bytes as integers (so BF16, F16 and NaN compare exactly)."""
    t = t.contiguous()
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    size = t.element_size()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size])


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(as_bits(a), as_bits(b))


def private_mappings(file):
    """The address ranges where this process maps `file` privately and writably (from /proc/self/maps:
    an independent account of what the reader did; a deleted file keeps its mappings)."""
    path = os.path.realpath(file)
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) == 6 and fields[5].removesuffix(" (deleted)") == path and fields[1].startswith("rw") \
                    and fields[1][3] == "p":
                begin, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((begin, end))
    return ranges


def in_mapping(tensor, file):
    ptr = tensor.data_ptr() if isinstance(tensor, torch.Tensor) else tensor.ctypes.data
    return any(begin <= ptr < end for begin, end in private_mappings(file))


class RecordingSource:
    """A Source that records read_into calls (to see what a slice reads)."""

    def __init__(self, source):
        self._source, self.calls = source, []

    def read_into(self, name, dtype, ptr, nbytes, slice=None):  # noqa: A002
        self.calls.append((name, dtype, nbytes, slice))
        return self._source.read_into(name, dtype, ptr, nbytes, slice)

    def __contains__(self, name):
        return name in self._source

    def __getattr__(self, attr):
        return getattr(self._source, attr)


def mapping_of(address):
    """The file mapped at `address` in this process (/proc/self/maps), or "" for anonymous memory."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        begin, end = (int(x, 16) for x in fields[0].split("-"))
        if begin <= address < end:
            return fields[5] if len(fields) > 5 else ""
    return ""


# --- fixtures ---

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Checkpoints written here: a safetensors file of many dtypes, a GGUF file, a big-endian
    PyTorch zip, and (with the CLI) stories260K converted to Q8_0 GGUF and llama2.c v2."""
    d = tmp_path_factory.mktemp("safe_open")
    g = torch.Generator().manual_seed(0)
    tensors = {
        "f32": torch.randn(4, 6, 5, generator=g),
        "bf16": torch.randn(7, 9, generator=g).to(torch.bfloat16),
        "f16": torch.randn(3, 8, generator=g).to(torch.float16),
        "f64": torch.randn(5, generator=g).double(),
        "i64": torch.arange(12).reshape(3, 4),
        "i32": torch.arange(-6, 6, dtype=torch.int32).reshape(2, 6),
        "i16": torch.arange(10, dtype=torch.int16),
        "i8": torch.arange(-4, 4, dtype=torch.int8),
        "u8": torch.arange(200, 216, dtype=torch.uint8).reshape(4, 4),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(2, 0, 3),
    }
    out = {"tensors": tensors, "dir": d}
    out["st"] = d / "many.safetensors"
    save_file(tensors, out["st"], metadata={"framework": "pt", "note": "weightloader"})

    rng = np.random.default_rng(1)
    q_src = rng.standard_normal((6, 64)).astype(np.float32)
    q_raw, q_ref = quantize_q8_0(q_src)
    f16 = rng.standard_normal((3, 5)).astype(np.float16)
    f32 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    i32 = np.arange(-3, 4, dtype=np.int32)
    write_gguf(d / "test.gguf", [("q8", GGML_Q8_0, [6, 64], q_raw), ("f16", GGML_F16, [3, 5], f16.tobytes()),
                                 ("f32", GGML_F32, [2, 3, 4], f32.tobytes()), ("i32", GGML_I32, [7], i32.tobytes())],
               metadata=[("test.note", "hello")])
    out["gguf"] = d / "test.gguf"
    out["gguf_ref"] = {"q8": q_ref, "f16": f16, "f32": f32, "i32": i32}

    torch.save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5,
                "i": torch.arange(4, dtype=torch.int16) - 2}, d / "le.pt")
    with zipfile.ZipFile(d / "le.pt") as src, zipfile.ZipFile(d / "be.pt", "w", zipfile.ZIP_STORED) as dst:
        names = [i.filename for i in src.infolist()]
        prefix = names[0].split("/")[0]
        sizes = {f"{prefix}/data/0": 4, f"{prefix}/data/1": 2}
        for name in names:
            if name == f"{prefix}/byteorder":
                continue  # torch 2 writes "little" here; the copy says "big" below
            b = src.read(name)
            if name in sizes:
                b = np.frombuffer(b, dtype=f"<u{sizes[name]}").byteswap().tobytes()
            dst.writestr(name, b)
        dst.writestr(f"{prefix}/byteorder", "big")
    out["be"] = d / "be.pt"

    if CLI.is_file() and STORIES.is_file():
        out["q8_gguf"] = d / "stories-q8.gguf"
        out["v2"] = d / "stories-v2.bin"
        subprocess.run([str(CLI), "convert", str(STORIES), str(out["q8_gguf"]), "--to", "gguf", "--gguf-type", "q8_0",
                        "--no-tokenizer"], check=True, capture_output=True)
        subprocess.run([str(CLI), "convert", str(STORIES), str(out["v2"]), "--to", "llama2c", "--llama2c-version", "2",
                        "--group-size", "64"], check=True, capture_output=True)
    return out


# --- the reader's methods ---

def test_keys_offset_keys_metadata(files):
    header, _ = parse_safetensors(files["st"])
    by_offset = sorted((v["data_offsets"][0], k) for k, v in header.items() if k != "__metadata__")
    with safe_open(files["st"], framework="pt") as f:
        assert f.keys() == sorted(files["tensors"])
        assert f.offset_keys() == [k for _, k in by_offset]
        assert f.metadata() == {"framework": "pt", "note": "weightloader"}
        assert f.format == "safetensors"
        assert "f32" in f and "nope" not in f and len(f) == len(files["tensors"])


def test_get_tensor_every_dtype(files):
    for framework in ("pt", "np"):
        with safe_open(files["st"], framework=framework) as f:
            for name, expected in files["tensors"].items():
                if framework == "np" and expected.dtype == torch.bfloat16:
                    continue
                got = f.get_tensor(name)
                want = expected.numpy() if framework == "np" else expected
                assert same(got, want), name


def test_get_slice_shape_and_dtype(files):
    with safe_open(files["st"], framework="pt") as f:
        s = f.get_slice("bf16")
        assert s.get_shape() == [7, 9] and s.get_dtype() == "BF16"
        assert f.get_slice("scalar").get_shape() == [] and f.get_slice("bool").get_dtype() == "BOOL"
        assert f.get_slice("bf16", dtype="f32").get_dtype() == "F32"
        assert same(f.get_slice("scalar")[...], files["tensors"]["scalar"])
        assert same(f.get_slice("scalar")[()], files["tensors"]["scalar"])


def test_without_with_and_close(files):
    f = safe_open(files["st"], "pt")
    t = f.get_tensor("f32")
    s = f.get_slice("f32")
    f.close()
    f.close()  # twice is fine
    for call in (f.keys, f.offset_keys, f.metadata, lambda: f.get_tensor("f32"), lambda: f.get_slice("f32")):
        with pytest.raises(ValueError, match="closed"):
            call()
    with pytest.raises(wl.InvalidArgumentError):
        f.__enter__()
    assert same(t, files["tensors"]["f32"])
    assert same(s[1:3], files["tensors"]["f32"][1:3])  # a slice object outlives its reader, as in safetensors
    assert "closed" in repr(f)


def test_unknown_tensor_name(files):
    with safe_open(files["st"]) as f:
        for call in (f.get_tensor, f.get_slice):
            with pytest.raises(TensorNotFoundError) as err:
                call("no.such.tensor")
            assert isinstance(err.value, KeyError) and isinstance(err.value, wl.NotFoundError)
            assert err.value.code == "TensorNotFound" and err.value.tensor == "no.such.tensor"
            assert "no.such.tensor" in str(err.value)
        with pytest.raises(KeyError):
            f.get_tensor(3)


def test_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        safe_open(tmp_path / "missing.safetensors")
    with pytest.raises(FileNotFoundError):
        load_file(tmp_path / "missing" / "model.safetensors")
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(wl.Error):
        safe_open(tmp_path / "emptydir")


def test_framework_and_device_arguments(files):
    with pytest.raises(ValueError, match="framework"):
        safe_open(files["st"], framework="tf")
    with pytest.raises(ValueError, match="device"):
        safe_open(files["st"], framework="np", device="cuda")
    with pytest.raises(ValueError, match="device"):
        safe_open(files["st"], framework="pt", device="nowhere")
    with safe_open(files["st"], framework="numpy", device="cpu") as f:
        assert isinstance(f.get_tensor("f32"), np.ndarray)
    with safe_open(files["st"], framework="torch", device=torch.device("cpu")) as f:
        assert isinstance(f.get_tensor("f32"), torch.Tensor)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_device(files):
    with safe_open(files["st"], framework="pt", device="cuda:0") as f:
        t = f.get_tensor("bf16")
        assert t.device.type == "cuda" and same(t.cpu(), files["tensors"]["bf16"])
        assert f.get_slice("f32")[1].device.type == "cuda"


def test_dtype_conversion(files):
    bf16 = files["tensors"]["bf16"]
    with safe_open(files["st"], framework="pt") as f:
        assert same(f.get_tensor("bf16", dtype="f32"), bf16.float())
        assert same(f.get_tensor("bf16", dtype=torch.float32), bf16.float())
        assert same(f.get_slice("bf16", dtype="f32")[2:4, 1], bf16.float()[2:4, 1])
    with safe_open(files["st"], framework="np", dtype="f32") as f:
        assert same(f.get_tensor("bf16"), bf16.float().numpy())
        assert same(f.get_tensor("f16"), files["tensors"]["f16"].float().numpy())
    with safe_open(files["st"], framework="pt", dtype=torch.float16) as f:
        assert f.get_tensor("f32").dtype == torch.float16


def test_numpy_cannot_hold_bf16_or_f8(files, tmp_path):
    with safe_open(files["st"], framework="np") as f:
        with pytest.raises(TypeError, match='framework="pt"'):
            f.get_tensor("bf16")
        with pytest.raises(TypeError, match="dtype="):
            f.get_slice("bf16")[0]
        assert f.get_slice("bf16").get_dtype() == "BF16"
    path = tmp_path / "f8.safetensors"
    write_safetensors_raw(path, {"e4m3": ("F8_E4M3", [4], bytes([0x38, 0x40, 0xB8, 0x00])),
                                 "u16": ("U16", [2], struct.pack("<2H", 1, 65535))})
    for framework in ("pt", "np"):
        with safe_open(path, framework=framework) as f:
            assert f.get_slice("e4m3").get_dtype() == "F8_E4M3"
            got = f.get_tensor("e4m3", dtype="f32")
            assert list(got.tolist()) == [1.0, 2.0, -1.0, 0.0]
    with safe_open(path, framework="np") as f:
        with pytest.raises(TypeError, match="dtype="):
            f.get_tensor("e4m3")  # NumPy has no float8
        assert f.get_tensor("u16").tolist() == [1, 65535] and f.get_tensor("u16").dtype == np.uint16
    with safe_open(path, framework="pt") as f:  # torch has both, as they are stored
        e4m3 = f.get_tensor("e4m3")
        assert e4m3.dtype == torch.float8_e4m3fn and e4m3.float().tolist() == [1.0, 2.0, -1.0, 0.0]
        u16 = f.get_tensor("u16")
        assert u16.dtype == torch.uint16 and u16.int().tolist() == [1, 65535]
        assert f.get_tensor("u16", dtype="i32").tolist() == [1, 65535]


# --- zero-copy and lifetimes ---

def test_zero_copy_shares_the_private_mapping(files, tmp_path):
    path = tmp_path / "copy.safetensors"
    shutil.copy(files["st"], path)
    before = path.read_bytes()
    for framework in ("pt", "np"):
        f = safe_open(path, framework=framework)
        for name in ("f32", "f16", "i64", "u8") + (("bf16",) if framework == "pt" else ()):
            a, b = f.get_tensor(name), f.get_tensor(name)
            assert in_mapping(a, path) and in_mapping(b, path), name
            if framework == "pt":
                assert a.data_ptr() == b.data_ptr()
                a.view(-1)[0] = a.view(-1)[1]
                assert same(b, a)
            else:
                assert np.shares_memory(a, b) and a.flags.writeable
                a.reshape(-1)[0] = a.reshape(-1)[1]
                assert same(b, a)
        # The writes stay in this reader's private mapping: never in the file, nor in another reader.
        with safe_open(path, framework=framework) as other:
            assert same(other.get_tensor("i64"), files["tensors"]["i64"].numpy() if framework == "np"
                        else files["tensors"]["i64"])
        f.close()
    assert path.read_bytes() == before


def test_zero_copy_slices_are_views_of_the_mapping(files):
    with safe_open(files["st"], framework="pt") as f:
        f._state.source = rec = RecordingSource(f._state.source)
        s = f.get_slice("f32")[1:3, 2]
        assert in_mapping(s, files["st"]) and same(s, files["tensors"]["f32"][1:3, 2])
        assert rec.calls == []  # nothing read through the library: only the mapping's pages


def test_tensor_outlives_closed_reader(files, tmp_path):
    path = tmp_path / "life.safetensors"
    shutil.copy(files["st"], path)
    for framework in ("pt", "np"):
        f = safe_open(path, framework=framework)
        t = f.get_tensor("f32")
        s = f.get_slice("i64")[1:]
        assert in_mapping(t, path)
        f.close()
        del f
        gc.collect()
        want = files["tensors"]["f32"]
        assert same(t, want.numpy() if framework == "np" else want)
        t[0, 0, 0] = 42.0
        assert float(t[0, 0, 0]) == 42.0
        assert s.tolist() == files["tensors"]["i64"][1:].tolist()


def test_tensor_outlives_deleted_file(files, tmp_path):
    path = tmp_path / "deleted.safetensors"
    shutil.copy(files["st"], path)
    with safe_open(path, framework="pt") as f:
        t = f.get_tensor("bf16")
        n = f.get_tensor("i32")
    os.remove(path)
    gc.collect()
    assert not path.exists()
    assert same(t, files["tensors"]["bf16"]) and same(n, files["tensors"]["i32"])
    n += 1
    assert same(n, files["tensors"]["i32"] + 1)


def test_misaligned_elements_are_decoded_not_viewed(tmp_path):
    path = tmp_path / "odd.safetensors"
    w = np.array([1.5, -2.0], dtype=np.float32)
    write_safetensors_raw(path, {"b": ("U8", [1], b"\x07"), "w": ("F32", [2], w.tobytes())})  # w one byte off
    for framework in ("pt", "np"):
        with safe_open(path, framework=framework) as f:
            b, got = f.get_tensor("b"), f.get_tensor("w")
            assert in_mapping(b, path) and not in_mapping(got, path)
            assert list(got.tolist()) == [1.5, -2.0]


def test_metadata_is_the_headers_own(tmp_path):
    """None when the header has no __metadata__ (or null), {} for an empty one; never config.json."""
    (tmp_path / "config.json").write_text('{"model_type": "test"}')
    path = tmp_path / "m.safetensors"
    for field, want in (("", None), ('"__metadata__":null,', None), ('"__metadata__":{},', {}),
                        ('"__metadata__":{"k":"v"},', {"k": "v"})):
        header = ("{" + field + '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}').encode()
        path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
        with safe_open(path) as f:
            assert f.metadata() == want, field


def test_chdir_after_open(files, tmp_path, monkeypatch):
    shutil.copy(files["gguf"], tmp_path / "rel.gguf")
    monkeypatch.chdir(tmp_path)
    f = safe_open("rel.gguf", framework="np")
    monkeypatch.chdir("/")
    assert same(f.get_tensor("f32"), files["gguf_ref"]["f32"])
    assert np.allclose(f.get_tensor("q8"), files["gguf_ref"]["q8"])
    f.close()


# --- slices ---

def index_cases(shape, rng, n):
    """Index expressions for a tensor of `shape`: fixed edge cases, then random ones."""
    cases = [(), Ellipsis, slice(None), 0, -1, slice(1, None), slice(None, -1), slice(-2, None), slice(0, 0),
             slice(5, 2), slice(-100, 100), slice(None, None, 1)]
    if len(shape) >= 2:
        cases += [(slice(None), 0), (0, -1), (Ellipsis, 1), (1, Ellipsis), (slice(1, 2), slice(None, 3)),
                  (slice(None), slice(1, -1)), (-1, slice(0, 0))]
    if len(shape) >= 3:
        cases += [(Ellipsis, 0, slice(1, 3)), (1, Ellipsis, 2), (slice(None), 1, slice(2, None)), (0, 1, 2)]
    for _ in range(n):
        k = rng.randint(1, len(shape))
        ellipsis = rng.random() < 0.3
        at_end = rng.random() < 0.5
        dims = range(k) if not ellipsis or at_end else range(len(shape) - k, len(shape))
        idx = []
        for d in dims:
            size = shape[d]
            if rng.random() < 0.3 and size:
                idx.append(rng.randint(-size, size - 1))
            else:
                a = rng.choice([None, rng.randint(-size - 2, size + 2)])
                b = rng.choice([None, rng.randint(-size - 2, size + 2)])
                idx.append(slice(a, b))
        if ellipsis:
            idx = idx + [Ellipsis] if at_end else [Ellipsis] + idx
        cases.append(tuple(idx) if len(idx) != 1 or rng.random() < 0.5 else idx[0])
    return cases


def check_slices(f, name, rng, n=60):
    full = f.get_tensor(name)
    s = f.get_slice(name)
    for idx in index_cases(list(full.shape), rng, n):
        got, want = s[idx], full[idx if isinstance(idx, tuple) else (idx,)][...]
        assert same(got, want), (name, idx)


def test_slices_equal_full_indexing_safetensors(files):
    rng = random.Random(7)
    for framework in ("pt", "np"):
        with safe_open(files["st"], framework=framework) as f:
            for name in ("f32", "f16", "i64", "u8", "i16") + (("bf16",) if framework == "pt" else ()):
                check_slices(f, name, rng)


@needs_testdata
def test_slices_equal_full_indexing_encoded(files):
    rng = random.Random(8)
    with safe_open(files["gguf"], framework="pt") as f:
        check_slices(f, "q8", rng, 120)  # quantised: sliced reads on and off block boundaries
    with safe_open(files["be"], framework="np") as f:
        check_slices(f, "w", rng)  # big-endian
        check_slices(f, "i", rng)
    with safe_open(PTZIP / "candle_fortran_tensor_3d.pth", framework="pt") as f:
        check_slices(f, "tensor_fortran", rng, 120)  # strided storage
    with safe_open(STORIES, framework="pt") as f:
        check_slices(f, "model.layers.1.self_attn.q_proj.weight", rng)  # rows presented in another order
        check_slices(f, "model.layers.0.self_attn.k_proj.weight", rng)


@needs_cli
def test_slices_equal_full_indexing_converted(files):
    rng = random.Random(9)
    with safe_open(files["q8_gguf"], framework="pt") as f:
        check_slices(f, "model.layers.2.mlp.down_proj.weight", rng)
        check_slices(f, "model.layers.0.self_attn.q_proj.weight", rng)
    with safe_open(files["v2"], framework="np") as f:
        check_slices(f, "model.layers.3.mlp.up_proj.weight", rng)
        check_slices(f, "model.embed_tokens.weight", rng)


def test_encoded_slices_read_only_their_rows(files):
    with safe_open(files["gguf"], framework="pt") as f:
        f._state.source = rec = RecordingSource(f._state.source)
        full = f.get_tensor("q8")
        rec.calls.clear()
        assert same(f.get_slice("q8")[2:4], full[2:4])
        assert rec.calls == [("q8", "F32", 2 * 64 * 4, (0, 2, 4))]
        rec.calls.clear()
        assert same(f.get_slice("q8")[1:5, 32:64], full[1:5, 32:64])  # one block of each row: dim 1 is narrower
        assert rec.calls == [("q8", "F32", 6 * 32 * 4, (1, 32, 64))]
        rec.calls.clear()
        assert same(f.get_slice("q8")[1:5, 3:7], full[1:5, 3:7])  # off the blocks: falls back to the rows
        assert rec.calls[-1] == ("q8", "F32", 4 * 64 * 4, (0, 1, 5))
        rec.calls.clear()
        assert same(f.get_slice("q8")[3], full[3])
        assert rec.calls == [("q8", "F32", 64 * 4, (0, 3, 4))]
        rec.calls.clear()
        assert f.get_slice("q8")[2:2].shape == (0, 64) and rec.calls == []


def test_bad_indices(files):
    with safe_open(files["st"], framework="pt") as f:
        s = f.get_slice("f32")
        with pytest.raises(ValueError, match="step"):
            s[::2]
        with pytest.raises(ValueError, match="step"):
            s[:, 1:4:2]
        with pytest.raises(ValueError, match="step"):
            s[::-1]
        with pytest.raises(IndexError):
            s[0, 0, 0, 0]
        with pytest.raises(IndexError):
            s[4]
        with pytest.raises(IndexError):
            s[-5]
        with pytest.raises(IndexError):
            s[..., ...]
        for bad in ([0, 1], None, "a", 1.5, True):
            with pytest.raises(TypeError):
                s[bad]
        assert same(s[np.int64(1)], files["tensors"]["f32"][1])
        assert same(f.get_slice("scalar")[...], files["tensors"]["scalar"])
        with pytest.raises(IndexError):
            f.get_slice("scalar")[0]


# --- reference files and other formats ---

def expected_vectors():
    rows = [line.split("\t") for line in (VECTORS / "EXPECTED.tsv").read_text().splitlines()[1:] if line.strip()]
    return [(r[0], r[2]) for r in rows]


@needs_testdata
def test_safetensors_vectors():
    for name, expected in expected_vectors():
        path = VECTORS / name
        if expected.startswith("ERR"):
            code = expected.split()[1]
            with pytest.raises(wl.FormatError) as err:
                with safe_open(path) as f:
                    [f.get_tensor(k) for k in f.keys()]
            assert err.value.code == code or isinstance(err.value, UnknownFormatError), (name, err.value)
            continue
        if "F4" in expected:  # as stored: torch's float4_e2m1fn_x2, two codes a byte
            with safe_open(path, framework="pt") as f:
                t = f.get_tensor("attn.0")
                assert t.dtype == torch.float4_e2m1fn_x2 and t.shape == (1, 1)
                assert f.get_tensor("attn.0", dtype="f32").tolist() == [[0.0, 0.0]]
            continue
        with safe_open(path, framework="pt") as f:
            got = {k: f.get_tensor(k) for k in f.keys()}
            meta = f.metadata()
        if "__metadata__ framework=pt" in expected or "__metadata__ {\"framework\":\"pt\"}" in expected:
            assert meta == {"framework": "pt"}, name
        else:
            assert meta is None, name
        if name == "ok_i32_one_at_1_1.safetensors":
            assert got["test"].tolist() == [[0, 0], [0, 1]] and got["test"].dtype == torch.int32
        if name.startswith("ok_serialize_f32"):
            (t,) = got.values()
            assert t.flatten().tolist() == [0, 1, 2, 3, 4, 5] and t.dtype == torch.float32
        if name == "ok_two_tensors_i32_f16.safetensors":
            assert got["test1"].dtype == torch.int32 and got["test2"].dtype == torch.float16
            assert not got["test1"].any() and not got["test2"].any()
        if name == "ok_zero_sized_tensor.safetensors":
            assert got["test"].shape == (2, 0)
        if name in ("ok_empty.safetensors", "ok_whitespace_leading.safetensors"):
            assert got == {}


@needs_testdata
def test_tiny_hf_llama(files):
    header, data = parse_safetensors(TINY_LLAMA / "model.safetensors")
    names = [k for k in header if k != "__metadata__"]
    for path in (TINY_LLAMA / "model.safetensors", TINY_LLAMA):
        with safe_open(path, framework="pt") as f:
            assert f.keys() == sorted(names)
            assert f.offset_keys() == sorted(names, key=lambda k: header[k]["data_offsets"][0])
            if path.is_dir():
                assert json.loads(f.metadata()["config.json"])["model_type"] == "llama"
            else:
                assert f.metadata() == header["__metadata__"]  # the file's own, not config.json
            for k in names:
                t = f.get_tensor(k)
                b, e = header[k]["data_offsets"]
                assert t.dtype == torch.bfloat16 and list(t.shape) == header[k]["shape"]
                assert as_bits(t).numpy().tobytes() == data[b:e], k
                assert in_mapping(t, TINY_LLAMA / "model.safetensors"), k
    loaded = load_file(TINY_LLAMA / "model.safetensors")
    assert list(loaded) == sorted(names)


@needs_testdata
def test_stories260k_llama2c():
    dim, layers, heads, kv_heads, vocab = 64, 5, 8, 4, 512
    raw = np.fromfile(STORIES, dtype=np.float32, offset=28)
    embed = raw[:vocab * dim].reshape(vocab, dim)
    at = vocab * dim + layers * dim
    wq0 = raw[at:at + dim * dim].reshape(dim, dim)
    at += layers * dim * dim
    kv_dim = kv_heads * dim // heads
    wk0 = raw[at:at + kv_dim * dim].reshape(kv_dim, dim)
    weights = wl.LocalWeightLoader().get_weights(str(STORIES))
    with safe_open(STORIES, framework="np") as f:
        assert f.metadata()["tie_word_embeddings"] == "true" and f.format == "llama2c"
        e = f.get_tensor("model.embed_tokens.weight")
        assert same(e, embed) and in_mapping(e, STORIES)
        q = f.get_tensor("model.layers.0.self_attn.q_proj.weight")
        assert same(q, np.ascontiguousarray(hf_permute(wq0, heads)))
        assert not in_mapping(q, STORIES)  # rows reordered: decoded into fresh memory
        assert same(f.get_tensor("model.layers.0.self_attn.k_proj.weight"),
                    np.ascontiguousarray(hf_permute(wk0, kv_heads)))
        for k in f.keys():
            assert same(f.get_tensor(k), weights[k].numpy()), k
        assert "lm_head.weight" not in f.keys() and len(f.keys()) == 2 + 9 * layers
    with safe_open(STORIES.parent, framework="np") as f:  # the directory, tokenizer beside the model
        assert f.format == "llama2c" and same(f.get_tensor("model.embed_tokens.weight"), embed)
    with safe_open(PTZIP, framework="pt") as f:  # a directory of PyTorch files: those like the first found
        assert f.format == "pytorch" and f.keys()


@needs_cli
def test_converted_q8_gguf_and_llama2c_v2(files):
    with safe_open(STORIES, framework="pt") as ref:
        want = {k: ref.get_tensor(k) for k in ref.keys()}
    for path, stored in ((files["q8_gguf"], "Q8_0"), (files["v2"], "I8")):
        with safe_open(path, framework="pt") as f:
            assert f.keys() == sorted(want)
            quantised = 0
            for k in f.keys():
                info = f._state.info(k)
                t = f.get_tensor(k)
                assert t.shape == want[k].shape, k
                if info["raw"]:  # F32 norms, F16 matrices whose rows are no whole Q8_0 blocks
                    assert in_mapping(t, path), k
                    assert same(t, want[k].to(t.dtype)), k
                else:
                    assert t.dtype == torch.float32, k
                    quantised += 1
                    assert not in_mapping(t, path)
                    tol = want[k].abs().max().item() / 127 * 0.51 + 1e-6
                    assert (t - want[k]).abs().max().item() <= tol * 1.01, (k, info["stored_type"])
            assert quantised >= 30, stored  # the matrices (GGUF: those whose rows are whole Q8_0 blocks)


def test_gguf_written_here(files):
    ref = files["gguf_ref"]
    for framework in ("pt", "np"):
        with safe_open(files["gguf"], framework=framework) as f:
            assert f.keys() == ["f16", "f32", "i32", "q8"] and f.offset_keys() == ["q8", "f16", "f32", "i32"]
            assert f.metadata()["general.architecture"] == "test" and f.metadata()["test.note"] == "hello"
            assert f.get_slice("q8").get_dtype() == "F32" and f.get_slice("f16").get_dtype() == "F16"
            for name in ("f16", "f32", "i32"):
                t = f.get_tensor(name)
                want = ref[name] if framework == "np" else torch.from_numpy(ref[name])
                assert same(t, want) and in_mapping(t, files["gguf"]), name
            q = f.get_tensor("q8")
            assert same(q, ref["q8"] if framework == "np" else torch.from_numpy(ref["q8"]))
            assert not in_mapping(q, files["gguf"])


@needs_testdata
def test_pytorch_zip_files(files):
    with safe_open(PTZIP / "candle_test.pt") as f:
        t = f.get_tensor("test")
        assert t.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]] and t.dtype == torch.int64
        assert in_mapping(t, PTZIP / "candle_test.pt")  # a stored zip entry, used in place
    with safe_open(PTZIP / "candle_test_with_key.pt") as f:
        assert f.get_tensor("test").tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    with safe_open(PTZIP / "candle_fortran_tensor_3d.pth", framework="np") as f:
        assert same(f.get_tensor("tensor_fortran"), np.arange(1, 25, dtype=np.int64).reshape(2, 3, 4))
    with safe_open(files["be"], framework="pt") as f:
        assert f._state.info("w")["stored_type"] == "F32 big-endian"
        assert same(f.get_tensor("w"), torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5)
        assert same(f.get_tensor("i"), torch.arange(4, dtype=torch.int16) - 2)


def test_directory_of_shards(files, tmp_path):
    t = files["tensors"]
    save_file({"a": t["f32"], "b": t["i64"]}, tmp_path / "model-00001-of-00002.safetensors")
    save_file({"c": t["bf16"], "d": t["u8"]}, tmp_path / "model-00002-of-00002.safetensors")
    (tmp_path / "config.json").write_text('{"model_type": "test"}')
    with safe_open(tmp_path, framework="pt") as f:
        assert f.keys() == ["a", "b", "c", "d"]
        assert f.offset_keys() == ["b", "a", "c", "d"]  # file by file, each by offset (I64 before F32)
        assert f.metadata() == {"config.json": '{"model_type": "test"}'}
        for name, src in (("a", "f32"), ("b", "i64"), ("c", "bf16"), ("d", "u8")):
            assert same(f.get_tensor(name), t[src]), name
    assert list(load_file(tmp_path)) == ["a", "b", "c", "d"]


# --- load / save ---

def test_load_file_and_load(files):
    got = load_file(files["st"])
    assert list(got) == sorted(files["tensors"])
    for k, v in files["tensors"].items():
        assert same(got[k], v), k
    data = files["st"].read_bytes()
    for blob in (data, bytearray(data), memoryview(data)):
        got = load(blob)
        assert list(got) == sorted(files["tensors"])
        for k, v in files["tensors"].items():
            assert same(got[k], v), k
    got = load(files["gguf"].read_bytes())  # any format, by content
    assert same(got["q8"], torch.from_numpy(files["gguf_ref"]["q8"]))
    with pytest.raises(wl.FormatError):
        load(data[:-1])
    with pytest.raises(wl.FormatError):
        load(b"not a checkpoint at all")


def test_load_file_copy_reads_fresh_memory_in_one_batch(files, tmp_path):
    """copy=True: safetensors' own load_file's values, every tensor in memory of its own (writable,
    no view of the file: writing leaves the file as it was); any format; a short file named."""
    from safetensors.torch import load_file as peer_load_file
    peer = peer_load_file(str(files["st"]))
    got = load_file(files["st"], copy=True)
    assert list(got) == sorted(peer)
    for k, v in peer.items():
        assert same(got[k], v), k
    mapped = [k for k, t in load_file(files["st"]).items() if t.numel() and mapping_of(t.data_ptr()) == str(files["st"])]
    assert mapped  # the control: without copy, tensors are views of the file's mapping
    assert not [k for k, t in got.items() if t.numel() and mapping_of(t.data_ptr()) == str(files["st"])]
    before = files["st"].read_bytes()
    got["f32"].fill_(7.0)
    assert files["st"].read_bytes() == before
    assert same(load_file(files["st"], copy=True)["f32"], peer["f32"])
    assert same(load_file(files["gguf"], copy=True)["q8"], torch.from_numpy(files["gguf_ref"]["q8"]))
    short = tmp_path / "short.safetensors"
    short.write_bytes(before[:-8])
    with pytest.raises(wl.FormatError, match="short.safetensors"):
        load_file(short, copy=True)


def test_save_file_layout_and_bytes(files):
    header, data = parse_safetensors(files["st"])
    assert header["__metadata__"] == {"framework": "pt", "note": "weightloader"}
    raw = files["st"].read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    names = [k for k in header if k != "__metadata__"]
    sizes = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
    # safetensors' order: larger element types first, then by name; so every tensor is aligned.
    ranks = ["BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "F64", "I64"]
    assert names == sorted(names, key=lambda k: (-ranks.index(header[k]["dtype"]), k))
    end = 0
    for k in names:
        b, e = header[k]["data_offsets"]
        assert b == end and b % sizes[header[k]["dtype"]] == 0
        end = e
        assert data[b:e] == as_bits(files["tensors"][k]).numpy().tobytes(), k
    assert end == len(data)


@needs_cli
def test_save_file_data_section_matches_the_cli_writer(files, tmp_path):
    subprocess.run([str(CLI), "convert", str(files["st"]), str(tmp_path / "out"), "--to", "safetensors"], check=True,
                   capture_output=True)
    mine_header, mine = parse_safetensors(files["st"])
    cli_header, cli = parse_safetensors(tmp_path / "out" / "model.safetensors")
    assert mine == cli
    for k in files["tensors"]:
        assert mine_header[k] == cli_header[k]


def test_save_noncontiguous_aliased_numpy(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    arr = np.arange(12, dtype=">i4").reshape(3, 4)  # big-endian
    tensors = {"t": base.t(), "view": base[1:3], "alias": base, "alias2": base, "np": arr[:, ::2],
               "np_f64": np.linspace(0, 1, 5), "npbool": np.array([True, False])}
    path = tmp_path / "mixed.safetensors"
    save_file(tensors, path)
    with safe_open(path, framework="np") as f:
        assert same(f.get_tensor("t"), base.t().contiguous().numpy())
        assert same(f.get_tensor("view"), base[1:3].numpy())
        assert same(f.get_tensor("alias"), base.numpy()) and same(f.get_tensor("alias2"), base.numpy())
        assert same(f.get_tensor("np"), arr[:, ::2].astype("<i4"))
        assert same(f.get_tensor("np_f64"), np.linspace(0, 1, 5))
        assert same(f.get_tensor("npbool"), np.array([True, False]))
    assert base.is_contiguous() and base[0, 0] == 0  # inputs untouched


def test_save_bytes_roundtrip(files):
    blob = save(files["tensors"], metadata={"framework": "pt", "note": "weightloader"})
    assert blob == files["st"].read_bytes()
    got = load(blob)
    for k, v in files["tensors"].items():
        assert same(got[k], v), k
    assert save({}) == struct.pack("<Q", 8) + b"{}" + b" " * 6


def test_save_errors_leave_the_file_alone(tmp_path, files):
    path = tmp_path / "keep.safetensors"
    shutil.copy(files["st"], path)
    before = path.read_bytes()
    bad = [
        ({"__metadata__": torch.zeros(1)}, None, wl.InvalidArgumentError),
        ({"x": torch.zeros(1, dtype=torch.complex64)}, None, ValueError),
        ({"x": [1, 2, 3]}, None, ValueError),
        ({1: torch.zeros(1)}, None, ValueError),
        ({"x": torch.zeros(1)}, {"k": 1}, ValueError),
        ({"x": torch.zeros(1)}, "meta", ValueError),
        ([("x", torch.zeros(1))], None, ValueError),
        ({"x": torch.zeros(2).to_sparse()}, None, ValueError),
        ({"bad\udcff": torch.zeros(1)}, None, Exception),
    ]
    for tensors, metadata, exc in bad:
        with pytest.raises(exc):
            save_file(tensors, path, metadata=metadata)
        assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.safetensors"]  # no temporary left behind
    with pytest.raises(wl.Error):
        save_file({"x": torch.zeros(1)}, tmp_path / "no" / "such" / "dir" / "x.safetensors")


def test_save_makes_the_bytes_of_save_file_in_memory(tmp_path, monkeypatch):
    """save() needs no file: with the temporary directory unusable it still gives exactly the bytes
    save_file writes (strided and BF16 tensors, metadata)."""
    import tempfile
    tensors = {"m": torch.arange(12, dtype=torch.int32).reshape(3, 4).t(), "w": torch.randn(5, 7).to(torch.bfloat16),
               "empty": torch.zeros(0, 3)}
    save_file(tensors, tmp_path / "t.safetensors", metadata={"k": "v"})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no" / "such" / "dir"))
    assert save(tensors, metadata={"k": "v"}) == (tmp_path / "t.safetensors").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["t.safetensors"]
    with pytest.raises(wl.Error, match="given twice|__metadata__|valid UTF-8|metadata"):
        save(tensors, metadata={"k": 1})


def test_against_the_safetensors_package(files, tmp_path):
    st = pytest.importorskip("safetensors", reason="the safetensors package is not installed in this environment")
    import safetensors.torch as stt
    tensors = {k: v for k, v in files["tensors"].items()}
    ours = save(tensors, metadata={"framework": "pt"})
    theirs = stt.save(tensors, metadata={"framework": "pt"})
    assert ours == theirs
    for k, v in stt.load(ours).items():
        assert same(v, tensors[k])
    with st.safe_open(str(files["st"]), framework="pt") as theirs_f, safe_open(files["st"], framework="pt") as f:
        assert theirs_f.keys() == f.keys() and theirs_f.metadata() == f.metadata()
        for k in f.keys():
            assert same(theirs_f.get_tensor(k), f.get_tensor(k))
            assert theirs_f.get_slice(k).get_dtype() == f.get_slice(k).get_dtype()


# --- hostile files ---

def read_everything(path):
    with safe_open(path, framework="pt") as f:
        for k in f.keys():
            f.get_tensor(k)
            shape = f.get_slice(k).get_shape()
            if shape and shape[0]:
                f.get_slice(k)[shape[0] // 2:]


def expect_clean(path, must_fail):
    try:
        read_everything(path)
    except wl.Error:
        return
    except FileNotFoundError:
        return
    assert not must_fail, f"{path.name} was accepted"


def test_hostile_truncations(files, tmp_path):
    blobs = {"st": files["st"].read_bytes(), "gguf": files["gguf"].read_bytes(), "be": files["be"].read_bytes()}
    if STORIES.is_file():
        blobs["llama2c"] = STORIES.read_bytes()[:40000]  # a prefix of v0: no format claims it
    for kind, blob in blobs.items():
        step = 1 if len(blob) < 2000 else max(1, len(blob) // 400)
        for cut in list(range(0, len(blob), step)) + [len(blob) - 1]:
            path = tmp_path / f"{kind}-{cut}"
            path.write_bytes(blob[:cut])
            try:
                read_everything(path)
            except wl.Error:
                pass
            else:
                pytest.fail(f"{kind} cut to {cut} of {len(blob)} bytes was accepted")
            path.unlink()


def test_hostile_headers(tmp_path):
    cases = {
        "huge_len": struct.pack("<Q", 2**63) + b"{}",
        "max_len": struct.pack("<Q", 2**64 - 1) + b"{}      ",
        "over_limit": struct.pack("<Q", 100_000_001) + b"{" + b" " * 64,
        "past_end": struct.pack("<Q", 64) + b"{}",
        "zero_len": struct.pack("<Q", 0),
        "not_json": struct.pack("<Q", 8) + b"{notjson",
        "offsets_past_data": None,
        "negative_offsets": None,
        "shape_overflow": None,
        "gguf_huge_counts": b"GGUF" + struct.pack("<IQQ", 3, 2**62, 2**62),
        "gguf_huge_string": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**63) + b"k",
        "gguf_bad_version": b"GGUF" + struct.pack("<IQQ", 99, 0, 0),
        "llama2c_v2_huge_dim": struct.pack("<Ii7iBi", 0x616B3432, 2, 2**30, 8, 1, 1, 1, 8, 8, 1, 64) + b"\0" * 214,
        "zip_garbage": b"PK\x03\x04" + b"\xff" * 200,
        "empty": b"",
    }
    for name, blob in cases.items():
        path = tmp_path / f"{name}.bin"
        if blob is None:
            if name == "offsets_past_data":
                write_safetensors_raw(path, {"a": ("F32", [4], b"\0" * 16)})
                header, data = parse_safetensors(path)
                header["a"]["data_offsets"] = [0, 1 << 40]
            elif name == "negative_offsets":
                write_safetensors_raw(path, {"a": ("F32", [1], b"\0" * 4)})
                header, data = parse_safetensors(path)
                header["a"]["data_offsets"] = [-4, 0]
            else:
                write_safetensors_raw(path, {"a": ("F32", [1], b"\0" * 4)})
                header, data = parse_safetensors(path)
                header["a"]["shape"] = [2**40, 2**40]
            text = json.dumps(header).encode()
            path.write_bytes(struct.pack("<Q", len(text)) + text + data)
        else:
            path.write_bytes(blob)
        with pytest.raises(wl.FormatError):
            read_everything(path)


def test_hostile_mutations(files, tmp_path):
    rng = random.Random(1234)
    blobs = [files["st"].read_bytes(), files["gguf"].read_bytes()]
    accepted = rejected = 0
    for i in range(400):
        blob = bytearray(rng.choice(blobs))
        limit = min(len(blob), 700)  # the headers, where the structure is
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(limit)
            blob[at] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256), blob[at] ^ (1 << rng.randrange(8))])
        path = tmp_path / f"m{i}"
        path.write_bytes(bytes(blob))
        try:
            read_everything(path)
            accepted += 1
        except wl.Error:
            rejected += 1
        path.unlink()
    assert rejected > 0 and accepted + rejected == 400


# --- threads ---

def test_thread_pool_reads_one_reader(files):
    paths = [files["gguf"], files["st"]] + ([files["q8_gguf"]] if "q8_gguf" in files else [])
    paths += [STORIES] if STORIES.is_file() else []
    for path in paths:
        with safe_open(path, framework="pt") as f:
            names = f.keys()
            serial = {k: f.get_tensor(k).clone() for k in names}

            def work(job):
                k, sliced = job
                if sliced:
                    shape = f.get_slice(k).get_shape()
                    if not shape or not shape[0]:
                        return k, sliced, f.get_tensor(k)
                    return k, sliced, f.get_slice(k)[shape[0] // 3:]
                return k, sliced, f.get_tensor(k)

            jobs = [(k, s) for k in names for s in (False, True)] * 6
            random.Random(5).shuffle(jobs)
            with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
                for k, sliced, t in pool.map(work, jobs):
                    want = serial[k]
                    if sliced and want.dim() and want.shape[0]:
                        want = want[want.shape[0] // 3:]
                    assert same(t, want), (path.name, k, sliced)
