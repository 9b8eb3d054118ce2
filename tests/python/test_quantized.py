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
