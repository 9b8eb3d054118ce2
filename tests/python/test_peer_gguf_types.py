"""Every GGML block type that the pinned gguf-py dequantises and test_peer_gguf.py does not already
cover (the K-quants Q2_K and Q3_K, the ternary TQ1_0 / TQ2_0, the microscaling MXFP4 / NVFP4, the
non-linear IQ4_NL / IQ4_XS and the grid types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
IQ1_M): a GGUF written by gguf-py's GGUFWriter holding random blocks of the type (scale fields
made finite), read by weightloader, equals gguf.quants.dequantize of the same bytes bit for bit.
Where gguf-py can quantise the type, its quantised random-normal matrices too. Q8_K, which gguf-py
neither quantises nor dequantises, is checked against ggml's definition (dequantize_row_q8_K:
y = d * q) written here in NumPy. Also: the IQ grid header is what scripts/gen_iq_grids.py makes of
this gguf-py; `weightloader inspect` lists tensors of every type, a type still undecoded is refused
only when read; a truncated tensor of a new type is refused naming the file and the tensor."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import weightloader as wl

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402
from test_peer_gguf import write_peer_file  # noqa: E402  (the one GGUFWriter round of the peer tests)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
G = gguf.GGMLQuantizationType


def finite_f16(rng, n, scale=0.05):
    return (rng.standard_normal((n, 1)) * scale).astype(np.float16).view(np.uint8)


def iq1_m_scales(rng, raw):
    """IQ1_M keeps its f16 d in the top nibbles of its four u16 scale words (word 0 lowest)."""
    n = raw.shape[0]
    d = (rng.standard_normal(n) * 0.05).astype(np.float16).view(np.uint16)
    words = raw[:, 48:56].copy().view(np.uint16)
    for k in range(4):
        words[:, k] = (words[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
    raw[:, 48:56] = words.view(np.uint8)


def mxfp4_scales(rng, raw):
    raw[:, 0] = rng.integers(100, 150, size=raw.shape[0], dtype=np.uint8)  # 2^-28 .. 2^21


# Each new type: how to make a random block's scale fields finite (byte offsets of f16 fields, or a
# function of (rng, blocks)).
NEW_TYPES = {
    G.Q2_K: (80, 82), G.Q3_K: (108,), G.TQ1_0: (52,), G.TQ2_0: (64,), G.IQ4_NL: (0,), G.IQ4_XS: (0,),
    G.MXFP4: mxfp4_scales, G.NVFP4: (),  # NVFP4's E4M3 scales are finite whatever their bits
    G.IQ2_XXS: (0,), G.IQ2_XS: (0,), G.IQ2_S: (0,), G.IQ3_XXS: (0,), G.IQ3_S: (0,), G.IQ1_S: (0,),
    G.IQ1_M: iq1_m_scales,
}
# rows x elements per row, each a whole number of blocks of every type
SHAPES = [(4, 256), (3, 512), (37, 1024)]


def random_blocks(rng, qtype, shape):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = int(np.prod(shape)) // block
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    fix = NEW_TYPES.get(qtype, ())
    if callable(fix):
        fix(rng, raw)
    else:
        for at in fix:
            raw[:, at:at + 2] = finite_f16(rng, n_blocks)
    return raw.reshape(shape[0], shape[1] // block * size)


def quantisable(qtype):
    try:
        quants.quantize(np.zeros((1, 256), dtype=np.float32), qtype)
        return True
    except (NotImplementedError, ValueError):
        return False


def assert_bits_equal(got, want, what):
    got, want = np.ascontiguousarray(got, dtype=np.float32), np.ascontiguousarray(want, dtype=np.float32)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert np.isfinite(want).all(), f"{what}: the reference has non-finite values (scale fields not made finite)"
    differ = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    if len(differ):
        i = int(differ[0])
        raise AssertionError(f"{what}: {len(differ)} of {got.size} elements differ; first at flat index {i}: "
                             f"weightloader {got.flat[i]!r}, gguf-py {want.flat[i]!r}")


def read_all(path, names):
    with wl.safe_open(str(path), framework="np") as f:
        return {name: f.get_tensor(name) for name in names}


def test_every_new_type_is_one_gguf_py_dequantises():
    # So that a gguf-py release that drops or adds a dequantiser shows up here.
    for qtype in NEW_TYPES:
        quants.dequantize(np.zeros(gguf.GGML_QUANT_SIZES[qtype][1], dtype=np.uint8), qtype)
    with pytest.raises(NotImplementedError):
        quants.dequantize(np.zeros(292, dtype=np.uint8), G.Q8_K)


@pytest.mark.parametrize("qtype", list(NEW_TYPES), ids=lambda q: q.name)
def test_random_blocks_decode_as_gguf_py_dequantises_them(tmp_path, qtype):
    rng = np.random.default_rng(int(qtype) * 7919)
    tensors = [(f"peer.{qtype.name.lower()}.{i}", random_blocks(rng, qtype, shape), qtype) for i, shape in enumerate(SHAPES)]
    path = tmp_path / "peer.gguf"
    write_peer_file(path, tensors)
    got = read_all(path, [t[0] for t in tensors])
    blocks = 0
    for name, raw, _ in tensors:
        want = quants.dequantize(raw, qtype)
        assert_bits_equal(got[name], want, f"{name} ({qtype.name})")
        blocks += raw.size // gguf.GGML_QUANT_SIZES[qtype][1]
    assert blocks >= 148  # (37 x 1024) alone is 148 blocks of 256 elements


@pytest.mark.parametrize("qtype", [q for q in NEW_TYPES if quantisable(q)], ids=lambda q: q.name)
def test_gguf_py_quantised_matrices_decode_as_gguf_py_dequantises_them(tmp_path, qtype):
    rng = np.random.default_rng(11)
    values = rng.standard_normal((64, 1024)).astype(np.float32)
    values[0] = 0
    values[1, 5] = 300.0
    values[2] *= 1e-6
    data = quants.quantize(values, qtype)
    path = tmp_path / "quantised.gguf"
    write_peer_file(path, [("peer.q", data, qtype)])
    assert_bits_equal(read_all(path, ["peer.q"])["peer.q"], quants.dequantize(data, qtype), f"quantised {qtype.name}")


def test_q8_k_decodes_as_ggml_defines_it(tmp_path):
    # block_q8_K: f32 d, int8 qs[256], int16 bsums[16]; dequantize_row_q8_K: y[j] = d * qs[j].
    rng = np.random.default_rng(8)
    n = 40
    raw = rng.integers(0, 256, size=(n, 292), dtype=np.uint8)
    raw[:, 0:4] = (rng.standard_normal((n, 1)) * 0.01).astype(np.float32).view(np.uint8)
    d = raw[:, 0:4].copy().view(np.float32)
    want = (d * raw[:, 4:260].view(np.int8).astype(np.float32)).reshape(4, 10 * 256)
    path = tmp_path / "q8k.gguf"
    write_peer_file(path, [("peer.q8_k", raw.reshape(4, 10 * 292), G.Q8_K)])
    assert_bits_equal(read_all(path, ["peer.q8_k"])["peer.q8_k"], want, "Q8_K")


def test_the_iq_grid_header_is_what_the_script_makes_of_this_gguf_py():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_iq_grids.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_inspect_lists_every_type_and_only_a_read_of_an_undecoded_one_is_refused(tmp_path):
    rng = np.random.default_rng(3)
    undecoded = [G.Q8_1]  # gguf-py writes it; nobody decodes it (ggml has no dequantisation of it)
    tensors = [(f"peer.{q.name.lower()}", random_blocks(rng, q, (2, 1024)), q)
               for q in list(NEW_TYPES) + [G.Q8_K, G.Q1_0] + undecoded]
    path = tmp_path / "all.gguf"
    write_peer_file(path, tensors)
    listed = json.loads(subprocess.run([str(CLI), "inspect", str(path), "--json"], capture_output=True, text=True, check=True).stdout)
    assert {t["name"]: t["dtype"] for t in listed["tensors"]} == {name: q.name for name, _, q in tensors}
    source = wl.LocalWeightLoader().get_weights(str(path))
    assert source.info("peer.q8_1")["stored_type"] == "Q8_1"
    with wl.safe_open(str(path), framework="np") as f:
        f.get_tensor("peer.q2_k")  # the decoded ones read
        # Q1_0, which gguf-py 0.19.0 lists but does not dequantise: f16 d, then one sign bit per element
        # (bit j % 8 of byte j / 8): d or -d, as ggml's dequantize_row_q1_0 (scripts/llama-cpp-check.sh
        # compares ggml's own values).
        blocks = dict((n, b) for n, b, _ in tensors)["peer.q1_0"].reshape(-1, 18)
        d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
        signs = np.unpackbits(blocks[:, 2:], axis=1, bitorder="little").astype(np.float32) * 2 - 1
        assert np.array_equal(f.get_tensor("peer.q1_0").reshape(-1, 128), d * signs, equal_nan=True)  # random d: some NaN
        for q in undecoded:
            name = f"peer.{q.name.lower()}"
            with pytest.raises(wl.Error) as refused:
                f.get_tensor(name)
            message = str(refused.value)
            assert "GgufUnsupportedTensorType" in message and name in message and q.name in message, message
            assert str(path) in message, message


@pytest.mark.parametrize("qtype", [G.Q3_K, G.IQ2_S], ids=lambda q: q.name)
def test_a_truncated_tensor_is_refused_naming_the_file_and_the_tensor(tmp_path, qtype):
    rng = np.random.default_rng(5)
    path = tmp_path / "cut.gguf"
    write_peer_file(path, [("peer.cut", random_blocks(rng, qtype, (4, 1024)), qtype)])
    data = path.read_bytes()
    path.write_bytes(data[:-100])  # the last block loses 100 bytes
    with pytest.raises(wl.Error) as refused:
        with wl.safe_open(str(path), framework="np") as f:
            f.get_tensor("peer.cut")
    message = str(refused.value)
    assert "peer.cut" in message and str(path) in message, message
