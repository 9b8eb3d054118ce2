"""Microscaling and FP4 checkpoints loaded dense, bit for bit against each library's own
dequantisation run here on tiny random tensors: gpt-oss's MXFP4 experts (transformers 5's
convert_moe_packed_tensors))."""
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

