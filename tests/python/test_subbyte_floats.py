"""safetensors' sub-byte floats (F4, F6_E2M3, F6_E3M2) and FP8 weights with F8_E8M0 block scales,
bit for bit against code that nobody here wrote: ml_dtypes (Google's float4_e2m1fn, float6_e2m3fn,
float6_e3m2fn: one code a byte, bit pattern -> float) for the values, torch for float4_e2m1fn_x2's
packing and float8_e8m0fnu / float8_e4m3fn's values, safetensors itself for F4 files. F6 files are
written here from the header spec (safetensors and torch have no F6 writer), packed as the library
reads them: a least-significant-bit-first stream, 4 codes in 3 bytes (zarr's packbits order)."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest
import torch

import weightloader as wl
from weightloader.safe_open import safe_open

# dtype code: (bits, ml_dtypes type name)
TYPES = {"F4": (4, "float4_e2m1fn"), "F6_E2M3": (6, "float6_e2m3fn"), "F6_E3M2": (6, "float6_e3m2fn")}
TARGETS = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def pack(codes, bits):
    """Codes as one little-endian bit stream: code i at bits [i*bits, (i+1)*bits)."""
    stream = np.unpackbits(np.asarray(codes, dtype=np.uint8)[:, None], axis=1, bitorder="little")[:, :bits]
    return np.packbits(stream.reshape(-1), bitorder="little").tobytes()


def safetensors_file(path, tensors):
    """A safetensors file of (name, dtype code, shape, data bytes), written from the format's spec."""
    header, offset = {}, 0
    for name, code, shape, data in tensors:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))
    return path


def every_code(bits):
    """Every code in every position of a block (F4: 2 a byte; F6: 4 in 3 bytes), 16 a row."""
    n = 1 << bits
    codes = np.concatenate([np.arange(n), (np.arange(n) * 7 + 3) % n, (np.arange(n) * 5 + 1) % n, np.arange(n)[::-1]])
    return codes.astype(np.uint8).reshape(-1, 16)


def reference(codes, code):
    """ml_dtypes' value of each code, as F32 (the test is skipped where ml_dtypes is not installed)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return torch.from_numpy(codes.view(getattr(ml_dtypes, TYPES[code][1])).astype(np.float32))


def same_bits(got, want):
    """Bit for bit: -0 is not +0."""
    bits = {4: torch.int32, 2: torch.int16}[want.element_size()]
    return got.dtype == want.dtype and got.shape == want.shape and torch.equal(got.view(bits), want.view(bits))


def f4_file(path, codes):
    """An F4 file written by safetensors itself, from torch's float4_e2m1fn_x2 (low nibble first)."""
    import safetensors.torch
    pairs = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    packed = torch.from_numpy(pairs).view(torch.float4_e2m1fn_x2)
    safetensors.torch.save_file({"codes": packed}, str(path))
    return path, packed


@pytest.mark.parametrize("code", TYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_every_code_decoded_bit_exact(tmp_path, code, target):
    bits, _ = TYPES[code]
    codes = every_code(bits)
    if code == "F4":
        path, _ = f4_file(tmp_path / "t.safetensors", codes)
        assert b'"dtype":"F4","shape":[' + str(codes.shape[0]).encode() + b',16]' in path.read_bytes()[:200]
    else:
        path = safetensors_file(tmp_path / "t.safetensors",
                                [("codes", code, list(codes.shape), pack(codes.reshape(-1), bits))])
    want = reference(codes, code).to(TARGETS[target])  # every code is exact in BF16 and F16
    assert (want.view(-1)[:(1 << bits)].float() == reference(codes, code).view(-1)[:(1 << bits)]).all()
    with safe_open(path, framework="pt") as f:
        assert f.get_slice("codes").get_shape() == list(codes.shape)
        got = f.get_tensor("codes", dtype=target)
    assert same_bits(got, want), (got, want)


@pytest.mark.parametrize("code", TYPES)
def test_loaded_into_a_module_in_its_dtype(tmp_path, code):
    bits, _ = TYPES[code]
    codes = every_code(bits)
    path = safetensors_file(tmp_path / "model.safetensors", [("w", code, list(codes.shape), pack(codes.reshape(-1), bits))])
    module = torch.nn.Module()
    module.register_parameter("w", torch.nn.Parameter(torch.empty(codes.shape, dtype=torch.bfloat16)))
    assert wl.load_into(module, str(path)) == ([], [])
    assert same_bits(module.w.data, reference(codes, code).to(torch.bfloat16))


def test_f4_packing_is_torchs(tmp_path):
    """safetensors' load and ours hand the same float4_e2m1fn_x2 bytes; the library's decoded values
    are ml_dtypes' for the low nibble first."""
    import safetensors.torch
    import weightloader.safetensors.torch as wst
    codes = every_code(4)
    path, packed = f4_file(tmp_path / "t.safetensors", codes)
    theirs = safetensors.torch.load_file(str(path))["codes"]
    for ours in (wst.load_file(str(path))["codes"], wst.load(path.read_bytes())["codes"],
                 safe_open(path, framework="pt").get_tensor("codes")):
        assert ours.dtype == theirs.dtype == torch.float4_e2m1fn_x2 and ours.shape == theirs.shape == packed.shape
        assert torch.equal(ours.view(torch.uint8), theirs.view(torch.uint8))
    decoded = safe_open(path, framework="np").get_tensor("codes")  # NumPy has no F4: decoded
    assert same_bits(torch.from_numpy(decoded), reference(codes, "F4"))


def test_f4_with_an_odd_last_dimension_decodes_but_has_no_packed_form(tmp_path):
    codes = np.arange(6, dtype=np.uint8).reshape(2, 3)
    path = safetensors_file(tmp_path / "t.safetensors", [("odd", "F4", [2, 3], pack(codes.reshape(-1), 4))])
    with safe_open(path, framework="pt") as f:
        assert same_bits(f.get_tensor("odd", dtype="f32"), reference(codes, "F4"))
        with pytest.raises(wl.InvalidArgumentError, match="tensor 'odd': F4 \\[2, 3\\] has an odd last dimension"):
            f.get_tensor("odd")


@pytest.mark.parametrize("code,shape", [("F4", [3]), ("F6_E2M3", [2]), ("F6_E3M2", [3, 5])])
def test_shapes_that_do_not_fill_whole_bytes_are_refused(tmp_path, code, shape):
    bits = TYPES[code][0]
    nbytes = (int(np.prod(shape)) * bits + 7) // 8
    path = safetensors_file(tmp_path / "t.safetensors", [("w", code, shape, b"\0" * nbytes)])
    with pytest.raises(wl.FormatError, match=f"tensor 'w': {code} .* not a whole number of bytes") as err:
        safe_open(path)
    assert err.value.code == "MisalignedSlice" and err.value.file == str(path) and err.value.tensor == "w"


def test_cli_inspect_shows_the_stored_type(tmp_path):
    codes = every_code(6)
    path = safetensors_file(tmp_path / "t.safetensors", [("w", "F6_E3M2", list(codes.shape), pack(codes.reshape(-1), 6))])
    run = subprocess.run([os.environ.get("WL_CLI", "build/weightloader"), "inspect", str(path), "--json"],
                         capture_output=True, text=True, check=True)
    shown = json.loads(run.stdout)
    (tensor,) = [t for t in shown["tensors"] if t["name"] == "w"]
    assert tensor["dtype"] == "F6_E3M2" and tensor["shape"] == list(codes.shape) and tensor["bytes"] == 192


# --- FP8 E4M3 weights with F8_E8M0 block scales (DeepSeek's scale_fmt ue8m0) ---

def test_fp8_block_scales_stored_as_e8m0_equal_torch(tmp_path):
    import safetensors.torch
    g = torch.Generator().manual_seed(7)
    weight = torch.randint(0, 256, (64, 16), dtype=torch.uint8, generator=g)
    weight[weight & 0x7F == 0x7F] = 0x38  # e4m3fn's NaN codes: 1.0 instead
    scale = torch.arange(256, dtype=torch.uint8).reshape(32, 8)  # every exponent, 0xFF (NaN) too
    prefix = "model.layers.0.mlp.down_proj."
    safetensors.torch.save_file({prefix + "weight": weight.view(torch.float8_e4m3fn),
                                 prefix + "weight_scale_inv": scale.view(torch.float8_e8m0fnu)},
                                str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [2, 2],
        "scale_fmt": "ue8m0"}}))
    # transformers' FP8 dequantisation: the weight in F32 times each block's scale_inv in F32
    blocks = scale.view(torch.float8_e8m0fnu).float().repeat_interleave(2, 0).repeat_interleave(2, 1)
    want = weight.view(torch.float8_e4m3fn).float() * blocks
    assert want.isnan().any() and want.isinf().any() and (want.abs() < 2.0 ** -126).any()
    for dtype in (torch.float32, torch.bfloat16):
        root = torch.nn.Module()
        node = root
        for part in prefix.strip(".").split("."):
            child = torch.nn.Module()
            node.add_module(part, child)
            node = child
        node.register_parameter("weight", torch.nn.Parameter(torch.empty(64, 16, dtype=dtype)))
        assert wl.load_into(root, str(tmp_path)) == ([], [])
        got, ref = node.weight.data, want.to(dtype)
        nan = ref.isnan()
        assert torch.equal(got.isnan(), nan)
        assert same_bits(got[~nan], ref[~nan])
