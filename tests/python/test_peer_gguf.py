"""weightloader against gguf-py (llama.cpp's own Python reader/writer, the pinned `gguf` package), both
directions, bit for bit:

1. gguf-py reads every GGUF that `weightloader convert` writes (f32, f16, bf16 and every block type:
   q8_0, q5_1, q5_0, q4_1, q4_0, mxfp4, tq2_0, tq1_0 (test_gguf_quantize.py: their bytes); a Hugging Face
   safetensors model and a llama2.c one): it accepts the file and its metadata, the tensor names are
   llama.cpp's for the architecture, and for every tensor gguf-py's values (gguf.quants.dequantize
   of the stored bytes) equal what weightloader reads from the same file, bit for bit in F32.
2. weightloader reads what gguf-py writes: GGUFWriter files holding tensors quantised by gguf-py's
   own quantisers (every type gguf.quants.quantize implements), K-quant blocks gguf-py dequantises
   and the integer / F64 types; each tensor equals gguf.quants.dequantize of the same bytes (the
   array itself for the integer types and F64), bit for bit. Every type weightloader does not decode
   is listed, and reading it is refused with a FormatError naming the tensor and the type.

Tensors are matched by their data offset in the file (weightloader presents a GGUF's llama tensors
under Hugging Face names, with the q/k rows in Hugging Face's order; the Python API has no raw-name
view), and the name correspondence is checked against gguf-py's own TensorNameMap."""
import os
import pathlib
import subprocess

import numpy as np
import pytest
import torch

import weightloader as wl

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
G = gguf.GGMLQuantizationType

# What weightloader decodes (its GgufUnsupportedTensorType message lists the same).
WL_DECODES = {G.F32, G.F16, G.BF16, G.F64, G.I8, G.I16, G.I32, G.I64,
              G.Q4_0, G.Q4_1, G.Q5_0, G.Q5_1, G.Q8_0, G.Q2_K, G.Q3_K, G.Q4_K, G.Q5_K, G.Q6_K, G.Q8_K,
              G.TQ1_0, G.TQ2_0, G.IQ4_NL, G.IQ4_XS, G.MXFP4, G.NVFP4, G.Q1_0,
              G.IQ2_XXS, G.IQ2_XS, G.IQ2_S, G.IQ3_XXS, G.IQ3_S, G.IQ1_S, G.IQ1_M}

# --gguf-type -> (the matrices' GGML type, general.file_type as llama.cpp's LlamaFileType numbers it)
GGUF_TYPES = {"f32": (G.F32, gguf.LlamaFileType.ALL_F32), "f16": (G.F16, gguf.LlamaFileType.MOSTLY_F16),
              "bf16": (G.BF16, gguf.LlamaFileType.MOSTLY_BF16), "q8_0": (G.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
              "q5_1": (G.Q5_1, gguf.LlamaFileType.MOSTLY_Q5_1), "q5_0": (G.Q5_0, gguf.LlamaFileType.MOSTLY_Q5_0),
              "q4_1": (G.Q4_1, gguf.LlamaFileType.MOSTLY_Q4_1), "q4_0": (G.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
              "mxfp4": (G.MXFP4, gguf.LlamaFileType.MOSTLY_MXFP4_MOE),
              "tq2_0": (G.TQ2_0, gguf.LlamaFileType.MOSTLY_TQ2_0), "tq1_0": (G.TQ1_0, gguf.LlamaFileType.MOSTLY_TQ1_0)}


def bits(t):
    """A float32 tensor's bit patterns (so NaN payloads and -0.0 compare too)."""
    assert t.dtype == torch.float32
    return t.contiguous().view(torch.int32)


def assert_bit_equal(got, want, what, names=("weightloader", "gguf-py")):
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    differ = (bits(got) != bits(want)).flatten().nonzero()
    if len(differ):
        i = int(differ[0])
        raise AssertionError(f"{what}: {len(differ)} of {got.numel()} elements differ; first at flat index {i}: "
                             f"{names[0]} {got.flatten()[i].item()!r}, {names[1]} {want.flatten()[i].item()!r}")


def gguf_py_values(t):
    """gguf-py's values of a ReaderTensor: dequantised to float32, shaped row-major (ne reversed)."""
    return torch.from_numpy(np.array(quants.dequantize(t.data, t.tensor_type), dtype=np.float32, copy=True)
                            .reshape([int(n) for n in reversed(t.shape)]))


def to_interleaved_rows(w, n_head):
    """Hugging Face's rotate-half q/k row order -> the interleaved pairs GGUF stores (FORMATS.md): in
    each head, row i of the first half and row i of the second half become rows 2i and 2i+1."""
    halves = w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
    return halves.transpose(1, 2).reshape(w.shape)


def field(reader, key):
    return reader.fields[key].contents()


# --- 1. gguf-py reads what weightloader writes -------------------------------------------------

@pytest.fixture(scope="module")
def sources(testdata, stories):
    found = {"hf-tiny-random-llama-2": testdata / "hf-tiny-random-llama-2", "stories260K": stories}
    for path in found.values():
        if not path.exists():
            pytest.skip(f"no test data at {path}")
    return found


@pytest.fixture(scope="module")
def converted(sources, tmp_path_factory):
    """(model, --gguf-type) -> the GGUF file `weightloader convert` wrote, made once per module."""
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI}")
    out_dir, made = tmp_path_factory.mktemp("peer_gguf"), {}

    def make(model, gtype):
        if (model, gtype) not in made:
            out = out_dir / f"{model}-{gtype}.gguf"
            done = subprocess.run([str(CLI), "convert", str(sources[model]), str(out), "--gguf-type", gtype,
                                   "--no-tokenizer", "-q"], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            made[model, gtype] = out
        return made[model, gtype]
    return make


@pytest.mark.parametrize("gtype", list(GGUF_TYPES))
@pytest.mark.parametrize("model", ["hf-tiny-random-llama-2", "stories260K"])
def test_gguf_py_reads_our_gguf_as_we_do(converted, model, gtype):
    path = converted(model, gtype)
    reader = gguf.GGUFReader(path)  # gguf-py parses the whole header and every tensor info
    matrix_type, file_type = GGUF_TYPES[gtype]

    # Metadata as llama.cpp reads it.
    assert field(reader, "general.architecture") == "llama"
    assert field(reader, "general.file_type") == file_type
    n_blocks = field(reader, "llama.block_count")
    n_head, n_kv = field(reader, "llama.attention.head_count"), field(reader, "llama.attention.head_count_kv")
    embd = field(reader, "llama.embedding_length")
    assert n_blocks > 0 and n_head > 0 and n_kv > 0 and embd % n_head == 0
    assert field(reader, "llama.rope.dimension_count") == embd // n_head

    # Every name is one of llama.cpp's llama tensors.
    llama_names = {gguf.TENSOR_NAMES[k].format(bid=b) + ".weight"
                   for k in gguf.MODEL_TENSORS[gguf.MODEL_ARCH.LLAMA] for b in range(n_blocks)}
    assert {t.name for t in reader.tensors} <= llama_names

    # Types: the matrices in the requested type (a block type: rows that are not whole blocks fall back
    # to F16, as llama.cpp's converter does), vectors in F32.
    block = gguf.GGML_QUANT_SIZES[matrix_type][0]
    for t in reader.tensors:
        if len(t.shape) == 1:
            assert t.tensor_type == G.F32, t.name
        elif int(t.shape[0]) % block:
            assert t.tensor_type == G.F16, t.name
        else:
            assert t.tensor_type == matrix_type, t.name
    if block < 256:  # neither model has rows of 256
        assert any(t.tensor_type == matrix_type for t in reader.tensors if len(t.shape) == 2)

    # The same tensors, matched by offset: names (through gguf-py's own HF -> GGUF map), shapes,
    # types, and the values bit for bit, as stored and converted to F32 while reading.
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_blocks)
    theirs = {int(t.data_offset): t for t in reader.tensors}
    assert len(theirs) == len(reader.tensors)
    with wl.safe_open(str(path), framework="pt") as ours, wl.safe_open(str(path), framework="pt", dtype="f32") as ours32:
        assert len(ours.keys()) == len(reader.tensors)
        source = wl.LocalWeightLoader().get_weights(str(path))
        assert sorted(source.keys()) == sorted(ours.keys())
        for hf_name in source.keys():
            info = source.info(hf_name)
            t = theirs.get(int(info["offset"]))
            assert t is not None, f"{hf_name}: no gguf-py tensor at offset {info['offset']}"
            assert name_map.get_name(hf_name, try_suffixes=(".weight", ".bias")) == t.name, hf_name
            assert info["stored_type"] == t.tensor_type.name, t.name
            assert info["nbytes"] == int(t.n_bytes), t.name
            assert list(info["shape"]) == [int(n) for n in reversed(t.shape)], t.name

            want = gguf_py_values(t)
            for got in (ours.get_tensor(hf_name).float(), ours32.get_tensor(hf_name)):
                if hf_name.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")):
                    got = to_interleaved_rows(got, n_head if "q_proj" in hf_name else n_kv)
                assert_bit_equal(got, want, f"{model} {gtype} {t.name} ({t.tensor_type.name})")


@pytest.mark.parametrize("model", ["hf-tiny-random-llama-2", "stories260K"])
def test_f32_gguf_holds_the_source_exactly_as_gguf_py_reads_it(sources, converted, model):
    """--gguf-type f32 loses nothing: gguf-py's values are the source's (llama.cpp's q/k row order)."""
    reader = gguf.GGUFReader(converted(model, "f32"))
    n_head, n_kv = field(reader, "llama.attention.head_count"), field(reader, "llama.attention.head_count_kv")
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, field(reader, "llama.block_count"))
    theirs = {t.name: t for t in reader.tensors}
    with wl.safe_open(str(sources[model]), framework="pt", dtype="f32") as src:
        names = [n for n in src.keys() if not (n == "lm_head.weight" and "output.weight" not in theirs)]  # tied
        assert len(names) == len(theirs)
        for hf_name in names:
            want = src.get_tensor(hf_name)
            if hf_name.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")):
                want = to_interleaved_rows(want, n_head if "q_proj" in hf_name else n_kv)
            gname = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            assert_bit_equal(gguf_py_values(theirs[gname]), want, f"{model} f32 {gname}", ("gguf-py", "source"))


# --- 2. weightloader reads what gguf-py writes -------------------------------------------------

SHAPES = [(4, 256), (3, 512), (2, 3, 256)]  # rows of whole 256-blocks (K-quants, TQ*), so every type fits


def peer_values(rng, shape):
    """Values with the awkward cases in them: a zero row, a row with one large outlier, tiny values."""
    a = rng.standard_normal(shape).astype(np.float32)
    rows = a.reshape(-1, shape[-1])
    rows[0] = 0
    rows[1, 7] = 300.0
    rows[-1] *= 1e-6
    return a


def gguf_py_quantisable():
    """The GGML types gguf.quants.quantize implements in this gguf-py release."""
    found = []
    for qtype in G:
        try:
            quants.quantize(np.zeros((1, 256), dtype=np.float32), qtype)
        except (NotImplementedError, ValueError):
            continue
        found.append(qtype)
    return found


QUANTISABLE = gguf_py_quantisable()
# K-quants gguf-py cannot make but dequantises: random blocks, with each block's f16 scales
# (byte offsets) made finite.
K_BLOCKS = {G.Q4_K: (0, 2), G.Q5_K: (0, 2), G.Q6_K: (208,)}
INTS = {G.I8: np.int8, G.I16: np.int16, G.I32: np.int32, G.I64: np.int64, G.F64: np.float64}


def random_blocks(rng, qtype, shape):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = int(np.prod(shape)) // block
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    for at in K_BLOCKS[qtype]:
        raw[:, at:at + 2] = (rng.standard_normal((n_blocks, 1)) * 0.05).astype(np.float16).view(np.uint8)
    return raw.reshape(*shape[:-1], shape[-1] // block * size)


def write_peer_file(path, tensors):
    """A GGUF written by gguf-py: tensors is [(name, array, raw_dtype or None)]."""
    writer = gguf.GGUFWriter(str(path), "peer")
    writer.add_description("written by gguf-py for weightloader's peer test")
    for name, array, raw_dtype in tensors:
        writer.add_tensor(name, array, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_py_quantises_the_expected_types():
    # So that a gguf-py release that adds a quantiser shows up here (and in the tests below).
    assert {G.F32, G.F16, G.BF16, G.Q4_0, G.Q4_1, G.Q5_0, G.Q5_1, G.Q8_0} <= set(QUANTISABLE)


def test_we_read_what_gguf_py_writes_bit_for_bit(tmp_path):
    rng = np.random.default_rng(2024)
    tensors, expected = [], {}
    for qtype in [q for q in QUANTISABLE if q in WL_DECODES]:  # gguf-py's quantisers
        for i, shape in enumerate(SHAPES):
            data = quants.quantize(peer_values(rng, shape), qtype)
            name = f"peer.{qtype.name.lower()}.{i}"
            tensors.append((name, data, None if qtype in (G.F32, G.F16) else qtype))
            expected[name] = (qtype, data)
    for qtype in K_BLOCKS:
        for i, shape in enumerate(SHAPES):
            name = f"peer.{qtype.name.lower()}.{i}"
            data = random_blocks(rng, qtype, shape)
            tensors.append((name, data, qtype))
            expected[name] = (qtype, data)
    for qtype, dtype in INTS.items():  # the writer types these from the array's dtype
        data = (rng.standard_normal(SHAPES[0]) * 1000).astype(dtype)
        name = f"peer.{qtype.name.lower()}"
        tensors.append((name, data, None))
        expected[name] = (qtype, data)
    path = tmp_path / "peer.gguf"
    write_peer_file(path, tensors)

    reader = gguf.GGUFReader(path)
    theirs = {t.name: t for t in reader.tensors}
    source = wl.LocalWeightLoader().get_weights(str(path))
    assert sorted(source.keys()) == sorted(expected)
    assert source.metadata()["general.architecture"] == "peer"
    with wl.safe_open(str(path), framework="pt") as ours:
        for name, (qtype, data) in expected.items():
            t = theirs[name]
            assert t.tensor_type == qtype, name
            info = source.info(name)
            assert info["stored_type"] == qtype.name, name
            assert list(info["shape"]) == [int(n) for n in reversed(t.shape)], name
            got = ours.get_tensor(name)
            if qtype in INTS:  # gguf-py has no dequantize for these: the array is the value
                assert got.dtype == torch.from_numpy(data).dtype, name
                assert torch.equal(got, torch.from_numpy(data)), name
                assert np.array_equal(t.data, data), name
                continue
            want = gguf_py_values(t)
            # the bytes gguf-py's reader sees are the bytes it wrote
            assert np.array_equal(np.asarray(t.data).view(np.uint8).reshape(-1), np.asarray(data).view(np.uint8).reshape(-1)), name
            assert_bit_equal(got.float(), want, f"{name} ({qtype.name}) as stored")
            assert_bit_equal(ours.get_tensor(name, dtype="f32"), want, f"{name} ({qtype.name}) read as f32")
            if got.dtype != torch.float32:  # F16 / BF16 come out as stored
                assert got.dtype == {G.F16: torch.float16, G.BF16: torch.bfloat16}[qtype], name


# Refused (weightloader does not decode them): every other GGML type (in gguf 0.19.0: Q8_1, which ggml
# has no dequantisation of; Q1_0, which gguf-py does not dequantise, is read as ggml reads it, checked
# by scripts/llama-cpp-check.sh against a ggml that has it), written as raw blocks of their size. The file is still listed, tensor and type; only reading the tensor fails.
# (tests/python/test_peer_gguf_types.py checks the types decoded since the first eight.)
UNSUPPORTED = [q for q in G if q not in WL_DECODES]


def test_the_types_left_undecoded():
    assert set(UNSUPPORTED) == {G.Q8_1}, UNSUPPORTED


@pytest.mark.parametrize("qtype", UNSUPPORTED, ids=lambda q: q.name)
def test_types_we_do_not_decode_are_refused_naming_the_tensor(tmp_path, qtype):
    rng = np.random.default_rng(7)
    shape = (2, 512)
    if qtype in QUANTISABLE:
        data = quants.quantize(peer_values(rng, shape), qtype)
    else:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        assert shape[-1] % block == 0, qtype.name
        data = rng.integers(0, 256, size=(shape[0], shape[-1] // block * size), dtype=np.uint8)
    name = f"peer.unsupported.{qtype.name.lower()}"
    path = tmp_path / "refused.gguf"
    write_peer_file(path, [("peer.fine", quants.quantize(peer_values(rng, shape), G.Q8_0), G.Q8_0),
                           (name, data, qtype)])
    assert {t.name: t.tensor_type for t in gguf.GGUFReader(path).tensors}[name] == qtype  # gguf-py reads it
    with pytest.raises(wl.Error) as refused:
        with wl.safe_open(str(path), framework="pt") as f:
            f.get_tensor(name)
    message = str(refused.value)
    assert name in message and qtype.name in message and "GgufUnsupportedTensorType" in message, message
    source = wl.LocalWeightLoader().get_weights(str(path))  # listed, with its type
    assert source.info(name)["stored_type"] == qtype.name
    assert list(source.info(name)["shape"]) == list(shape)
