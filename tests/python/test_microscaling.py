"""Microscaling and FP4 checkpoints loaded dense, bit for bit against each library's own
dequantisation run here on tiny random tensors: gpt-oss's MXFP4 experts (transformers 5's
convert_moe_packed_tensors), compressed-tensors' NVFP4 and MXFP4 (its compressors and decompress)."""
import json

import pytest
import torch

import weightloader as wl
from weightloader.safetensors.torch import save_file

EXPERTS = "model.layers.0.mlp.experts."


def experts_module(shapes):
    """A module holding `EXPERTS<name>` parameters of the given shapes, in BF16."""
    root = node = torch.nn.Module()
    for part in EXPERTS.strip(".").split("."):
        child = torch.nn.Module()
        node.add_module(part, child)
        node = child
    for name, shape in shapes.items():
        node.register_parameter(name, torch.nn.Parameter(torch.empty(shape, dtype=torch.bfloat16)))
    return root


def gpt_oss_folder(path, tensors):
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"model_type": "gpt_oss", "quantization_config": {
        "quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.embed_tokens"]}}))


def random_mxfp4(experts, rows, groups, low=100, high=150):
    g = torch.Generator().manual_seed(rows * 31 + groups)
    blocks = torch.randint(0, 256, (experts, rows, groups, 16), dtype=torch.uint8, generator=g)
    scales = torch.randint(low, high, (experts, rows, groups), dtype=torch.uint8, generator=g)
    return blocks, scales


def same_bits(got, want):
    """Bit for bit (-0 is not +0), NaN where the reference is NaN (whatever its payload)."""
    bits = torch.int16 if want.element_size() == 2 else torch.int32
    nan = want.isnan()
    return torch.equal(got.isnan(), nan) and torch.equal(got[~nan].view(bits), want[~nan].view(bits))


def test_gpt_oss_mxfp4_experts_equal_transformers(tmp_path):
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    gate_up = random_mxfp4(3, 44, 2)  # gate_up_proj: 2 x intermediate 22 outputs, hidden 64
    down = random_mxfp4(3, 64, 1)     # down_proj: hidden 64 outputs, intermediate 32
    # Every E8M0 exponent, 2^-127 to 2^128 (OCP's NaN code, which transformers' ldexp scales by).
    gate_up = (gate_up[0], (torch.arange(3 * 44 * 2) % 256).to(torch.uint8).reshape(3, 44, 2))
    bias = torch.randn(3, 44).to(torch.bfloat16)
    gpt_oss_folder(tmp_path, {EXPERTS + "gate_up_proj_blocks": gate_up[0], EXPERTS + "gate_up_proj_scales": gate_up[1],
                              EXPERTS + "gate_up_proj_bias": bias,
                              EXPERTS + "down_proj_blocks": down[0], EXPERTS + "down_proj_scales": down[1]})
    want = {"gate_up_proj": convert_moe_packed_tensors(*gate_up), "down_proj": convert_moe_packed_tensors(*down)}
    assert want["gate_up_proj"].shape == (3, 64, 44) and want["down_proj"].shape == (3, 32, 64)
    assert want["gate_up_proj"].isinf().any() and (want["gate_up_proj"].abs() == 2.0 ** 127).any()

    module = experts_module({name: w.shape for name, w in want.items()} | {"gate_up_proj_bias": bias.shape})
    assert wl.load_into(module, str(tmp_path)) == ([], [])
    state = module.state_dict()
    for name, w in want.items():
        assert same_bits(state[EXPERTS + name], w), name
    assert torch.equal(state[EXPERTS + "gate_up_proj_bias"], bias)

    dense = wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
    assert sorted(dense.keys()) == [EXPERTS + n for n in ("down_proj", "gate_up_proj", "gate_up_proj_bias")]
    for name in want:  # F32 as transformers computes it in F32
        got = dense[EXPERTS + name]
        assert got.dtype == torch.float32
        assert same_bits(got, convert_moe_packed_tensors(*(gate_up if name == "gate_up_proj" else down), dtype=torch.float32))


def test_gpt_oss_mxfp4_as_stored_hands_over_blocks_and_scales(tmp_path):
    blocks, scales = random_mxfp4(2, 4, 2)
    gpt_oss_folder(tmp_path, {EXPERTS + "down_proj_blocks": blocks, EXPERTS + "down_proj_scales": scales})
    stored = wl.WeightLoaderRegistry.create("local", quantized="as_stored").get_weights(str(tmp_path))
    assert torch.equal(stored[EXPERTS + "down_proj_blocks"], blocks)
    assert torch.equal(stored[EXPERTS + "down_proj_scales"], scales)


def test_gpt_oss_mxfp4_scales_that_do_not_match_the_blocks_are_named(tmp_path):
    blocks, scales = random_mxfp4(2, 4, 2)
    gpt_oss_folder(tmp_path, {EXPERTS + "down_proj_blocks": blocks, EXPERTS + "down_proj_scales": scales[:, :, :1].contiguous()})
    with pytest.raises(wl.Error) as info:
        wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
    message = str(info.value)
    assert "model.safetensors" in message and EXPERTS + "down_proj_scales" in message
    assert "[2, 4, 1]" in message and "[2, 4, 2]" in message and "E8M0" in message


# compressed-tensors NVFP4 / MXFP4: the checkpoint its own compressor writes, the reference its own
# decompress (BF16, as it dequantises); random codes and scales too, so that every code and sign occurs.
LINEAR = "model.layers.0.mlp.down_proj"


def linear_module(name, out, inputs):
    root = node = torch.nn.Module()
    for part in name.split(".")[:-1]:
        node.add_module(part, torch.nn.Module())
        node = getattr(node, part)
    node.add_module(name.split(".")[-1], torch.nn.Linear(inputs, out, bias=False, dtype=torch.bfloat16))
    return root


def ct_folder(path, fmt, scheme, tensors):
    from compressed_tensors.quantization import QuantizationConfig
    config = QuantizationConfig(config_groups={"group_0": scheme}, format=fmt).model_dump(exclude_none=True)
    save_file({LINEAR + "." + k: v.contiguous() for k, v in tensors.items()}, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"quantization_config": config}, default=str))


def ct_fp4_cases(fmt):
    from compressed_tensors.compressors.mxfp4.base import MXFP4PackedCompressor
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization import preset_name_to_scheme
    scheme = preset_name_to_scheme("NVFP4" if fmt == "nvfp4-pack-quantized" else "MXFP4", ["Linear"])
    compressor = NVFP4PackedCompressor if fmt == "nvfp4-pack-quantized" else MXFP4PackedCompressor
    g = torch.Generator().manual_seed(7)
    w = torch.randn(6, 64, generator=g).to(torch.bfloat16)
    group = scheme.weights.group_size
    amax = w.float().reshape(6, 64 // group, group).abs().amax(-1)
    if compressor is NVFP4PackedCompressor:
        global_scale = torch.tensor([448 * 6 / w.abs().max().float()])
        state = {"weight": w, "weight_scale": (amax / 6 * global_scale).to(torch.float8_e4m3fn).to(torch.bfloat16),
                 "weight_global_scale": global_scale}
        random = {"weight_packed": torch.randint(0, 256, (6, 32), dtype=torch.uint8, generator=g),
                  "weight_scale": torch.randint(0, 0x7f, (6, 4), dtype=torch.uint8, generator=g).view(torch.float8_e4m3fn),
                  "weight_global_scale": torch.tensor([3.7])}
    else:
        state = {"weight": w, "weight_scale": (2.0 ** torch.ceil(torch.log2(amax / 6))).to(torch.bfloat16)}
        random = {"weight_packed": torch.randint(0, 256, (6, 32), dtype=torch.uint8, generator=g),
                  "weight_scale": torch.tensor([0, 1, 21, 63, 100, 126, 127, 128, 150, 200, 254, 255], dtype=torch.uint8).reshape(6, 2)}
    return scheme, compressor, [compressor.compress(state, scheme), random]


@pytest.mark.parametrize("fmt", ["nvfp4-pack-quantized", "mxfp4-pack-quantized"])
def test_compressed_tensors_fp4_equals_its_decompression(tmp_path, fmt):
    scheme, compressor, cases = ct_fp4_cases(fmt)
    for n, stored in enumerate(cases):
        folder = tmp_path / str(n)
        folder.mkdir()
        ct_folder(folder, fmt, scheme, stored)
        want = compressor.decompress(dict(stored), scheme)["weight"]
        assert want.dtype == torch.bfloat16
        module = linear_module(LINEAR, 6, 64)
        assert wl.load_into(module, str(folder)) == ([], [])
        assert same_bits(module.state_dict()[LINEAR + ".weight"], want), n


def test_compressed_tensors_nvfp4_scales_that_do_not_match_are_named(tmp_path):
    scheme, _, cases = ct_fp4_cases("nvfp4-pack-quantized")
    stored = dict(cases[1], weight_scale=cases[1]["weight_scale"][:, :3])
    ct_folder(tmp_path, "nvfp4-pack-quantized", scheme, stored)
    with pytest.raises(wl.Error) as info:
        wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
    message = str(info.value)
    assert "model.safetensors" in message and LINEAR + ".weight_scale" in message
    assert "[6, 3]" in message and "[6, 4]" in message and "groups of 16" in message


def test_compressed_tensors_mxfp8_equals_its_decompression(tmp_path):
    from compressed_tensors.compressors.mxfp8.base import MXFP8QuantizationCompressor as compressor
    from compressed_tensors.quantization import preset_name_to_scheme
    scheme = preset_name_to_scheme("MXFP8", ["Linear"])
    g = torch.Generator().manual_seed(8)
    w = torch.randn(6, 64, generator=g).to(torch.bfloat16)
    amax = w.float().reshape(6, 2, 32).abs().amax(-1)
    made = compressor.compress({"weight": w, "weight_scale": (2.0 ** torch.ceil(torch.log2(amax / 448))).to(torch.bfloat16)}, scheme)
    codes = torch.randint(0, 256, (6, 64), dtype=torch.uint8, generator=g)
    codes[codes & 0x7f == 0x7f] = 0  # no NaN codes
    random = {"weight": codes.view(torch.float8_e4m3fn),
              "weight_scale": torch.tensor([0, 1, 21, 63, 100, 126, 127, 128, 150, 200, 254, 255], dtype=torch.uint8).reshape(6, 2)}
    for n, stored in enumerate([made, random]):
        assert stored["weight_scale"].dtype == torch.uint8
        folder = tmp_path / str(n)
        folder.mkdir()
        ct_folder(folder, "mxfp8-quantized", scheme, stored)
        want = compressor.decompress(dict(stored), scheme)["weight"]
        assert want.dtype == torch.bfloat16
        module = linear_module(LINEAR, 6, 64)
        assert wl.load_into(module, str(folder)) == ([], [])
        assert same_bits(module.state_dict()[LINEAR + ".weight"], want), n


def test_compressed_tensors_nvfp4_packed_width_that_cuts_a_group_is_named(tmp_path):
    scheme, _, cases = ct_fp4_cases("nvfp4-pack-quantized")
    stored = dict(cases[1], weight_packed=torch.zeros(6, 33, dtype=torch.uint8))  # 66 values: 4 groups and 2
    ct_folder(tmp_path, "nvfp4-pack-quantized", scheme, stored)
    with pytest.raises(wl.Error) as info:
        wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
    message = str(info.value)
    assert "model.safetensors" in message and LINEAR + ".weight_packed" in message
    assert "rows of 66 FP4 values do not split into groups of 16" in message


def test_compressed_tensors_nvfp4_zero_point_is_refused_not_ignored(tmp_path):
    scheme, _, cases = ct_fp4_cases("nvfp4-pack-quantized")
    ct_folder(tmp_path, "nvfp4-pack-quantized", scheme, dict(cases[1], weight_zero_point=torch.zeros(6, 4, dtype=torch.uint8)))
    with pytest.raises(wl.Error, match="weight_zero_point.*symmetric only|symmetric only.*weight_zero_point"):
        wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
