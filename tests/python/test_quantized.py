"""Quantized Hugging Face checkpoints loaded dense: load_into a module shaped like the dense layer
equals the method's own library's dequantisation (testdata/quantized/*/expected.safetensors), bit for
bit in BF16; the CLI converts a GPTQ checkpoint to dense and a dense one to GPTQ."""
import os
import subprocess

import pytest
import torch

import weightloader as wl

CLI = os.environ.get("WL_CLI", "build/weightloader")


def expected_weight(folder):
    with wl.safe_open(str(folder / "expected.safetensors"), framework="pt") as f:
        (name,) = list(f.keys())
        return name, f.get_tensor(name)




def dense_module(name, weight):
    """A module whose one parameter is `name`, shaped like the dense weight, in BF16."""
    parts = name.split(".")
    root = torch.nn.Module()
    node = root
    for part in parts[:-2]:
        child = torch.nn.Module()
        node.add_module(part, child)
        node = child
    node.add_module(parts[-2], torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False))
    return root.to(torch.bfloat16)


@pytest.mark.parametrize("folder", ["gptq-falcon3-1b-int4", "gptq-llama3.2-1b-gptqmodel-int8", "awq-llama3.2-1b",
                                    "fp8-block-qwen3-1.7b", "bnb-int8-llama3.2-1b"])
def test_load_into_dense_module_equals_the_reference(testdata, folder):
    path = testdata / "quantized" / folder
    name, want = expected_weight(path)
    module = dense_module(name, want)
    missing, unexpected = wl.load_into(module, str(path / "quantized.safetensors"))
    assert (missing, unexpected) == ([], [])
    got = module.state_dict()[name]
    assert got.dtype == torch.bfloat16
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


@pytest.mark.parametrize("folder", ["gptq-falcon3-1b-int4", "awq-falcon3-1b", "fp8-channel-llama3.2-1b-redhat",
                                    "bnb-nf4-dq-llama3.2-1b"])
def test_a_layer_over_http_comes_with_its_side_tensors_in_one_ranged_get(nginx, testdata, folder):
    """The packed weight and its scales, zeros, g_idx or absmax, stored side by side, are one ranged
    GET: the decoder declares them and the load plans them with the weight (read by the decoder one
    at a time, they were a GET each: 2 to 5)."""
    path = testdata / "quantized" / folder
    for f in ("quantized.safetensors", "quantization_config.json"):
        nginx.put(f"quantized/{folder}/{f}", path / f)
    name, want = expected_weight(path)
    loader = wl.LocalWeightLoader(concurrency=1)
    weights = loader.get_weights(nginx.url(f"quantized/{folder}/quantized.safetensors"))
    before = len(nginx.log())
    module = dense_module(name, want)
    loader.load_weights(module, weights, progress=False)
    gets = [e for e in nginx.log()[before:] if e.path == f"quantized/{folder}/quantized.safetensors" and e.method == "GET"]
    assert len(gets) == 1, [(e.range, e.sent) for e in gets]
    assert torch.equal(module.state_dict()[name].view(torch.int16), want.view(torch.int16))


def test_dequantized_layer_computes_what_the_reference_weight_computes(testdata):
    path = testdata / "quantized" / "gptq-llama3.2-1b-int4"
    name, want = expected_weight(path)
    module = dense_module(name, want)
    wl.load_into(module, str(path / "quantized.safetensors"))
    module = module.float()
    x = torch.randn(3, want.shape[1])
    layer = module.get_submodule(name.rsplit(".", 1)[0])
    assert torch.equal(layer(x), torch.nn.functional.linear(x, want.float()))


def test_cli_converts_gptq_to_dense_and_back(testdata, tmp_path):
    path = testdata / "quantized" / "gptq-falcon3-1b-int4"
    name, want = expected_weight(path)
    dense = tmp_path / "dense.safetensors"
    subprocess.run([CLI, "convert", str(path / "quantized.safetensors"), str(dense), "--dtype", "bf16", "-q"], check=True,
                   capture_output=True)
    with wl.safe_open(str(dense), framework="pt") as f:
        assert torch.equal(f.get_tensor(name).view(torch.int16), want.view(torch.int16))
    gptq = tmp_path / "gptq"
    subprocess.run([CLI, "convert", str(dense), str(gptq), "--quantize", "gptq-int4", "--quantize-group", "64", "-q"],
                   check=True, capture_output=True)
    inspect = subprocess.run([CLI, "inspect", str(gptq)], check=True, capture_output=True, text=True).stdout
    assert "gptq 4-bit, group 64" in inspect and "GPTQ-I4-g64" in inspect
    module = dense_module(name, want).float()
    wl.load_into(module, str(gptq))
    got = module.state_dict()[name]
    # Round to nearest with s = 2·amax/15 per (row, group of 64): at most half a step off (+ the F16 scale's rounding).
    groups = want.float().reshape(want.shape[0], -1, 64)
    bound = groups.abs().amax(dim=2, keepdim=True) / 15 * (1 + 8 / 1024)
    assert ((got.reshape(groups.shape) - groups).abs() <= bound).all()


def test_as_stored_gives_the_packed_tensors_byte_for_byte(testdata):
    path = testdata / "quantized" / "awq-falcon3-1b" / "quantized.safetensors"
    stored = wl.WeightLoaderRegistry.create("local", quantized="as_stored").get_weights(str(path))
    dense = wl.WeightLoaderRegistry.create("local").get_weights(str(path))
    prefix = "model.layers.0.mlp.gate_proj."
    assert sorted(stored.keys()) == [prefix + n for n in ("qweight", "qzeros", "scales")]
    assert list(dense.keys()) == [prefix + "weight"]
    with wl.safe_open(str(path), framework="pt") as f:
        for name in stored.keys():
            assert torch.equal(stored[name], f.get_tensor(name))


# compressed-tensors pack-quantized (w4a16, groups of 16): words packed by compressed-tensors' own
# pack_to_int32, the dense BF16 weight its dequantisation computed (the first case of
# tests/formats/quantized/pack_quantized_test.cpp, where their provenance is given).
CT_PACKED = [0x5b9f8cb5, 0xcd7c100f, 0x425e4296, 0x42edcacb, 0x60e71977, 0x96df799d, 0x3d881c01, 0x637e89af,
             0xb1843915, 0x293d04ac, 0x772f940f, 0xe739689a, 0x6395b4d7, 0x7ff7a208, 0x0eeac379, 0x03d11778]
CT_SCALE_BF16 = [0x3c89, 0x3ca6, 0x3b9d, 0x3c58, 0x3ca1, 0x3c90, 0x3c8d, 0x3c94]
CT_DENSE_BF16 = [0xbd4e, 0x3d4e, 0x3d89, 0x0000, 0x3df0, 0x3c89, 0x3d4e, 0xbd4e, 0x3df0, 0xbe09, 0xbe09, 0xbdf0,
                 0x3d89, 0xbc89, 0x3dab, 0x3d89, 0xbd26, 0x3ca6, 0xbdf9, 0xbda6, 0x3df9, 0xbd79, 0xbdf9, 0xbda6,
                 0x3d79, 0x3da6, 0x3d26, 0x3da6, 0x3dd0, 0x3df9, 0xbdf9, 0xbda6, 0xbb9d, 0xbb9d, 0x3b9d, 0xbd09,
                 0xbb9d, 0x3cec, 0xbd1d, 0xbc1d, 0x3cc4, 0x3b9d, 0x3b9d, 0xbb9d, 0x3d09, 0x3cc4, 0xbc1d, 0x3b9d,
                 0xbdbd, 0xbdd8, 0x3d58, 0xbdbd, 0x0000, 0x0000, 0x3d87, 0xbd87, 0x3dbd, 0x3cd8, 0x3c58, 0x0000,
                 0x3da2, 0xbc58, 0xbd87, 0xbcd8, 0xbd72, 0xbe0d, 0x3ca1, 0xbdc9, 0xbda1, 0x0000, 0xbe0d, 0x3d72,
                 0x3da1, 0x3d21, 0xbda1, 0xbe21, 0x3dc9, 0xbdc9, 0x3ca1, 0xbdf2, 0x3dfc, 0xbe10, 0xbd90, 0x3c90,
                 0x3dfc, 0xbdd8, 0xbc90, 0xbc90, 0x3d10, 0x3c90, 0x0000, 0xbd10, 0x3c90, 0xbdb4, 0xbc90, 0x3dd8,
                 0xbc8d, 0x3db0, 0xbd8d, 0x3d54, 0xbd54, 0x3c8d, 0xbdb0, 0xbd0d, 0x0000, 0xbe0d, 0xbdd4, 0x3d0d,
                 0xbc8d, 0x3df7, 0x3df7, 0xbc8d, 0x3c94, 0xbc94, 0xbdb9, 0x3d94, 0x3d14, 0x3dde, 0x3dde, 0xbe14,
                 0x0000, 0xbc94, 0xbc94, 0xbe02, 0xbe02, 0x3db9, 0xbdb9, 0xbe14]


def bf16(bits):
    import numpy as np
    return torch.from_numpy(np.array(bits, dtype=np.uint16).view(np.int16)).view(torch.bfloat16)


def test_compressed_tensors_pack_quantized_folder_loads_dense(tmp_path):
    import json
    import numpy as np
    from weightloader.safetensors.torch import save_file
    prefix = "model.layers.0.mlp.gate_proj"
    save_file({prefix + ".weight_packed": torch.from_numpy(np.array(CT_PACKED, dtype=np.uint32).view(np.int32).reshape(4, 4)),
               prefix + ".weight_scale": bf16(CT_SCALE_BF16).reshape(4, 2),
               prefix + ".weight_shape": torch.tensor([4, 32])}, str(tmp_path / "model.safetensors"))
    group = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 16,
                                               "symmetric": True}}
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": group}}}))
    want = bf16(CT_DENSE_BF16).reshape(4, 32)
    module = dense_module(prefix + ".weight", want)
    assert wl.load_into(module, str(tmp_path)) == ([], [])
    assert torch.equal(module.state_dict()[prefix + ".weight"].view(torch.int16), want.view(torch.int16))
    shown = subprocess.run([CLI, "inspect", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "compressed-tensors pack-quantized, 4-bit" in shown


# compressed-tensors sparse-bitmask: a pruned BF16 [3, 20] weight as compressed-tensors'
# bitmask_compress writes it and the dense weight its bitmask_decompress gives back
# (tests/formats/quantized/sparse_bitmask_test.cpp says where they come from).
SPARSE_VALUES = [0xbd9d, 0x3eb8, 0xbf48, 0x3d92, 0xbfcc, 0xbd54, 0x3e7e, 0x3ed5, 0x3f6e, 0xbf04, 0xbfd3, 0x3f06, 0x3f10,
                 0x4010, 0x3fef, 0x3f7f, 0xbef4, 0xbeb2, 0x3eb3, 0xbe8b, 0x3e11, 0x3f2e, 0x3e50, 0x3ed8, 0xbf9c, 0xbea9,
                 0xbed9, 0x3f03, 0xbefa]
SPARSE_BITMASK = [0x8f, 0x85, 0x0e, 0x72, 0xd1, 0x00, 0x1b, 0xe4, 0x09]


def test_compressed_tensors_sparse_bitmask_folder_loads_dense(tmp_path):
    import json
    from weightloader.safetensors.torch import save_file
    w = "model.layers.0.mlp.down_proj.weight"
    save_file({w + ".compressed": bf16(SPARSE_VALUES), w + ".bitmask": torch.tensor(SPARSE_BITMASK, dtype=torch.uint8).reshape(3, 3),
               w + ".row_offsets": torch.tensor([0, 11, 19]), w + ".shape": torch.tensor([3, 20])}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "dense", "sparsity_config": {"format": "sparse-bitmask"}}}))
    module = dense_module(w, torch.empty(3, 20))
    assert wl.load_into(module, str(tmp_path)) == ([], [])
    got = module.state_dict()[w]
    mask = torch.zeros(3, 24, dtype=torch.bool)
    for row in range(3):
        for c in range(24):
            mask[row, c] = bool(SPARSE_BITMASK[row * 3 + c // 8] >> (c % 8) & 1)
    assert torch.equal(got[~mask[:, :20]].float(), torch.zeros(int((~mask[:, :20]).sum())))  # zeros where pruned
    assert torch.equal(got[mask[:, :20]].view(torch.int16), bf16(SPARSE_VALUES).view(torch.int16))  # the values, in order


# compressed-tensors sparse-24-bitmask over int8 (2:4 sparsity applied over int-quantized weights),
# tensors named as since its #219 (no ".weight" infix): the int8 [4, 8] case of
# tests/formats/quantized/sparse_bitmask_test.cpp, whose values compressed-tensors' own
# sparse24_bitmask_compress and dequantize computed (provenance there).
TWO_FOUR_INT8 = [-53, 80, -75, -93, -126, -108, 97, 71, 96, 102, -65, 40, -119, 80, 125, 112]
TWO_FOUR_BITMASK = [108, 54, 204, 198]
TWO_FOUR_SCALE_BF16 = [0x3c03, 0x3ad0, 0x3c2b, 0x3b3c]
TWO_FOUR_DENSE_BF16 = [0x0000, 0x0000, 0xbed9, 0x3f24, 0x0000, 0xbf1a, 0xbf3e, 0x0000, 0x0000, 0xbe4d, 0xbe30, 0x0000, 0x3e1e, 0x3de7, 0x0000, 0x0000, 0x0000, 0x0000, 0x3f80, 0x3f88, 0x0000, 0x0000, 0xbf2e, 0x3ed6, 0x0000, 0xbeaf, 0x3e6b, 0x0000, 0x0000, 0x0000, 0x3eb8, 0x3ea4]


def test_compressed_tensors_sparse_24_over_int8_folder_loads_dense(tmp_path):
    import json
    from weightloader.safetensors.torch import save_file
    layer = "model.layers.0.mlp.up_proj"
    save_file({layer + ".compressed": torch.tensor(TWO_FOUR_INT8, dtype=torch.int8).reshape(4, 4),
               layer + ".bitmask": torch.tensor(TWO_FOUR_BITMASK, dtype=torch.uint8).reshape(4, 1),
               layer + ".shape": torch.tensor([4, 8]).reshape(2, 1), layer + ".weight_scale": bf16(TWO_FOUR_SCALE_BF16).reshape(4, 1),
               layer + ".input_scale": torch.tensor([0.5], dtype=torch.bfloat16)}, str(tmp_path / "model.safetensors"))
    group = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
             "input_activations": {"num_bits": 8, "type": "int", "strategy": "tensor", "symmetric": True}}
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": group},
        "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4", "targets": ["Linear"]}}}))
    want = bf16(TWO_FOUR_DENSE_BF16).reshape(4, 8)
    module = dense_module(layer + ".weight", want)
    assert wl.load_into(module, str(tmp_path)) == ([], [])
    assert torch.equal(module.state_dict()[layer + ".weight"].view(torch.int16), want.view(torch.int16))
    shown = subprocess.run([CLI, "inspect", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "int-quantized, 8-bit, channel scale, sparse-24-bitmask sparsity" in shown
