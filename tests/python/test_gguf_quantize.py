"""`weightloader convert --to gguf --gguf-type T` for every block type the pinned gguf-py quantises
(Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4): the bytes of every quantised tensor equal
gguf.quants.quantize of the same float32 values, byte for byte, on random values with the awkward
cases written in (blocks of zeros, negative maxima, equal magnitudes of both signs, values exactly
halfway between two codes, scales that overflow f16, tiny and subnormal blocks, maxima next to the
powers of two where MXFP4's exponent changes); rows of a multiple of 32 that is not one of 256 where
the type allows. What we read back from the file is gguf.quants.dequantize of its bytes, bit for bit,
and gguf-py's GGUFReader reads the whole file. A matrix whose rows are not whole blocks is written F16
by every type, as llama.cpp's converter does when gguf-py refuses to quantise it.

test_peer_gguf.py runs the same types over real models (stories260K, a tiny Hugging Face Llama)."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import weightloader as wl

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
G = gguf.GGMLQuantizationType

# --gguf-type -> (GGML type, general.file_type)
BLOCK_TYPES = {"q8_0": (G.Q8_0, 7), "q5_1": (G.Q5_1, 9), "q5_0": (G.Q5_0, 8), "q4_1": (G.Q4_1, 3),
               "q4_0": (G.Q4_0, 2), "mxfp4": (G.MXFP4, 38), "tq2_0": (G.TQ2_0, 37), "tq1_0": (G.TQ1_0, 36)}

HIDDEN, HEADS, VOCAB = 96, 2, 64  # rows of 96: three 32-blocks, no 256-block (TQ* fall back to F16)
INTERMEDIATE = 512                 # down_proj's rows: two 256-blocks, for every type


def awkward_row(rng, n, case):
    """One row of n values (n a multiple of 32) holding edge case `case` in its first block(s)."""
    row = (rng.standard_normal(n) * rng.choice([1e-3, 0.02, 1.0, 30.0])).astype(np.float32)
    b = row[:32]
    if case == "zeros":
        row[:256 if n >= 256 else 32] = 0
    elif case == "negative_max":
        b[5] = -4 * np.abs(b).max() - 1
    elif case == "equal_magnitudes":  # +a first, then -a; and in the next block -a first
        b[3], b[9] = 7.0, -7.0
        if n >= 64:
            row[40], row[50] = -7.0, 7.0
    elif case == "halves":  # scales of exactly 1 (or 0.5 for MXFP4): values halfway between two codes
        b[:] = (np.arange(32) % 16 - 7.5).astype(np.float32)
        b[0] = -8.0   # Q4_0: d = -8 / -8 = 1; x + 8.5 lands on integers
        b[1] = 15.5
        if n >= 64:
            c = row[32:64]
            c[:] = np.array([0, 15] + [k + 0.5 for k in range(15)] * 2, dtype=np.float32)  # Q4_1: min 0, max 15
        if n >= 96:
            c = row[64:96]
            c[:] = np.array([-127, 127] + [k + 0.5 for k in range(-15, 15)], dtype=np.float32)  # Q8_0: d = 1
        if n >= 512:  # the ternary types' second block: max 2, so +-1 is exactly halfway
            row[256:512] = rng.choice(np.array([-2, -1, 0, 1, 2], dtype=np.float32), size=256)
            row[300] = 2
    elif case == "mxfp4_midpoints":  # amax 6: scale 0.5, levels 0 .5 1 1.5 2 3 4 6; their midpoints
        mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
        b[:] = np.array([6.0] + mids + [-m for m in mids] + mids + [-m for m in mids] + [-6.0, 0.0, -0.0],
                        dtype=np.float32)[:32]
    elif case == "large":
        row *= 1e6 / max(np.abs(row).max(), 1e-30)  # Q4_0's d = max / 8 overflows f16
        b[0] = 3e7
        if n >= 64:
            row[32:64] = np.linspace(-1e30, 1e30, 32, dtype=np.float32)
    elif case == "tiny":
        row *= 1e-30 / max(np.abs(row).max(), 1e-30)
        b[:] = (rng.standard_normal(32) * 1e-39).astype(np.float32)  # subnormal: the inverse scale overflows
        if n >= 256:
            row[:256] = (rng.standard_normal(256) * 3e-40).astype(np.float32)
    elif case == "powers_of_two":  # MXFP4's exponent at float32 log2's rounding edges, and exact powers
        for i in range(n // 32):
            edge = np.float32(2.0 ** (-40 + 13 * (i % 9)))
            top = edge if i % 3 == 0 else np.nextafter(edge, np.float32(0))  # a power of two, or just below
            block = row[32 * i:32 * i + 32]
            block[:] = np.clip(block * edge, -top, top)
            block[7] = top if i % 2 else -top
    return row


CASES = ["random", "zeros", "negative_max", "equal_magnitudes", "halves", "mxfp4_midpoints", "large", "tiny",
         "powers_of_two"]


def awkward_matrix(rng, rows, n):
    return np.stack([awkward_row(rng, n, CASES[r % len(CASES)]) for r in range(rows)])


def write_llama(directory, rng, intermediate=INTERMEDIATE):
    """A one-layer Llama in Hugging Face's layout whose matrices hold the awkward rows."""
    directory.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "intermediate_size": intermediate, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
              "num_hidden_layers": 1, "vocab_size": VOCAB, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "max_position_embeddings": 128, "tie_word_embeddings": False, "torch_dtype": "float32"}
    (directory / "config.json").write_text(json.dumps(config))
    p = "model.layers.0."
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "lm_head.weight": (VOCAB, HIDDEN),
              "model.norm.weight": (HIDDEN,), p + "input_layernorm.weight": (HIDDEN,),
              p + "post_attention_layernorm.weight": (HIDDEN,),
              p + "self_attn.q_proj.weight": (HIDDEN, HIDDEN), p + "self_attn.k_proj.weight": (HIDDEN, HIDDEN),
              p + "self_attn.v_proj.weight": (HIDDEN, HIDDEN), p + "self_attn.o_proj.weight": (HIDDEN, HIDDEN),
              p + "mlp.gate_proj.weight": (intermediate, HIDDEN), p + "mlp.up_proj.weight": (intermediate, HIDDEN),
              p + "mlp.down_proj.weight": (HIDDEN, intermediate)}
    tensors = {name: awkward_matrix(rng, *shape) if len(shape) == 2 else rng.standard_normal(shape).astype(np.float32)
               for name, shape in shapes.items()}
    save_file(tensors, str(directory / "model.safetensors"))
    return tensors


def to_interleaved_rows(w, n_head):
    """Hugging Face's rotate-half q/k rows -> the interleaved pairs GGUF stores (FORMATS.md)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def stored_source(tensors):
    """GGUF name -> the float32 rows as the converter stores them (q/k rows interleaved)."""
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1)
    out = {}
    for name, w in tensors.items():
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            w = to_interleaved_rows(w, HEADS)
        out[name_map.get_name(name, try_suffixes=(".weight",))] = w
    return out


def convert(src, out, gtype):
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI}")
    done = subprocess.run([str(CLI), "convert", str(src), str(out), "--gguf-type", gtype, "--no-tokenizer", "-q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return gguf.GGUFReader(out)  # gguf-py reads the whole header, every tensor info and the data


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf_quantize")
    tensors = write_llama(d / "llama", np.random.default_rng(20251205))
    return d, stored_source(tensors)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def listed_block_types():
    """The --gguf-type names `convert --help` lists beyond f32, f16 and bf16."""
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI}")
    text = subprocess.run([str(CLI), "convert", "--help"], capture_output=True, text=True, check=True).stdout
    listed = text[text.index("--gguf-type"):].split("\n")[1:]
    # the type lines, up to the next option's
    listed = listed[:next(i for i, line in enumerate(listed) if line.lstrip().startswith("-"))]
    names = [line.split()[0] for line in listed if line.strip()]
    assert names[:3] == ["f32", "f16", "bf16"]
    return names[3:]


def test_we_write_every_type_gguf_py_quantises():
    # A gguf-py release that adds a quantiser shows up here: then add it to quantizers/list.inc.
    theirs = set()
    for qtype in G:
        try:
            quants.quantize(np.zeros((1, 256), dtype=np.float32), qtype)
        except (NotImplementedError, ValueError):
            continue
        theirs.add(qtype.name.lower())
    assert theirs - {"f32", "f16", "bf16"} == set(BLOCK_TYPES)
    assert listed_block_types() == list(BLOCK_TYPES)


@pytest.mark.parametrize("gtype", list(BLOCK_TYPES))
def test_convert_quantises_as_gguf_py_byte_for_byte(model, gtype):
    d, source = model
    qtype, file_type = BLOCK_TYPES[gtype]
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    path = d / f"model-{gtype}.gguf"
    reader = convert(d / "llama", path, gtype)
    assert reader.fields["general.file_type"].contents() == file_type
    theirs = {t.name: t for t in reader.tensors}
    assert sorted(theirs) == sorted(source)
    quantised = 0
    for name, w in source.items():
        t = theirs[name]
        if w.ndim == 1:
            assert t.tensor_type == G.F32, name
            continue
        if w.shape[-1] % block:  # TQ*: rows of 96
            assert t.tensor_type == G.F16, name
            assert np.array_equal(np.asarray(t.data).view(np.uint16), w.astype(np.float16).view(np.uint16)), name
            continue
        assert t.tensor_type == qtype, name
        want = quants.quantize(w, qtype)
        got = np.asarray(t.data).reshape(want.shape)
        differ = np.nonzero((got != want).any(axis=-1))[0]
        assert len(differ) == 0, (f"{gtype} {name}: rows {differ.tolist()[:8]} differ; first row {differ[0]}: "
                                  f"ours {got[differ[0]][:40].tobytes().hex()} gguf-py {want[differ[0]][:40].tobytes().hex()}")
        quantised += 1
    assert quantised >= (1 if block == 256 else 8)

    # What we read is gguf-py's dequantisation of the same bytes, bit for bit.
    with wl.safe_open(str(path), framework="np", dtype="f32") as ours:
        source_info = wl.LocalWeightLoader().get_weights(str(path))
        by_offset = {int(t.data_offset): t for t in reader.tensors}
        for hf_name in ours.keys():
            t = by_offset[int(source_info.info(hf_name)["offset"])]
            want = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
                [int(n) for n in reversed(t.shape)])
            got = ours.get_tensor(hf_name)
            if hf_name.endswith(("q_proj.weight", "k_proj.weight")):
                got = to_interleaved_rows(got, HEADS)
            assert np.array_equal(bits(got), bits(want)), f"{gtype} {t.name}"


@pytest.mark.parametrize("gtype", list(BLOCK_TYPES))
def test_rows_that_are_not_whole_blocks_are_written_f16(tmp_path, gtype):
    """intermediate_size 200: down_proj's rows are no whole 32-block (nor 256-block)."""
    tensors = write_llama(tmp_path / "llama", np.random.default_rng(7), intermediate=200)
    reader = convert(tmp_path / "llama", tmp_path / "out.gguf", gtype)
    qtype, _ = BLOCK_TYPES[gtype]
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    source = stored_source(tensors)
    for t in reader.tensors:
        w = source[t.name]
        want = G.F32 if w.ndim == 1 else qtype if w.shape[-1] % block == 0 else G.F16
        assert t.tensor_type == want, t.name
    assert reader.get_tensor(0) is not None
    assert {t.tensor_type for t in reader.tensors if t.name == "blk.0.ffn_down.weight"} == {G.F16}


def test_a_value_that_is_not_finite_is_refused(tmp_path):
    tensors = write_llama(tmp_path / "llama", np.random.default_rng(3))
    tensors["model.layers.0.mlp.up_proj.weight"][3, 17] = np.inf
    save_file(tensors, str(tmp_path / "llama" / "model.safetensors"))
    done = subprocess.run([str(CLI), "convert", str(tmp_path / "llama"), str(tmp_path / "out.gguf"), "--gguf-type",
                           "q4_0", "--no-tokenizer", "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "cannot quantise inf to Q4_0" in done.stderr and "ffn_up" in done.stderr
    assert not (tmp_path / "out.gguf").exists()


def test_an_unknown_type_is_refused_naming_the_types(tmp_path, model):
    d, _ = model
    done = subprocess.run([str(CLI), "convert", str(d / "llama"), str(tmp_path / "out.gguf"), "--gguf-type", "q4_k",
                           "--no-tokenizer", "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "gguf type 'q4_k' is not one of f32, f16, bf16, q8_0, q5_1, q5_0, q4_1, q4_0, mxfp4, tq2_0, tq1_0" in done.stderr
