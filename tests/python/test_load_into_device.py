"""load_into into CUDA tensors: the tensors' device decides where the values go (read and
converted on the host, copied through pinned buffers). Without a CUDA device only the refusals
and the CLI's message are checked here; scripts/gpu-check.sh measures the device path."""
import os
import subprocess

import pytest
import torch

import weightloader as wl
from weightloader._params import module_device


class Pair(torch.nn.Module):
    def __init__(self, device="cpu"):
        super().__init__()
        self.a = torch.nn.Linear(16, 8, bias=False, device=device)
        self.b = torch.nn.Linear(8, 4, device=device)


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(3)
    reference = Pair()
    torch.save(reference.state_dict(), tmp_path / "pytorch_model.bin")
    return reference, tmp_path


def test_a_module_split_over_devices_is_refused():
    module = Pair()
    module.b.to("meta")
    with pytest.raises(ValueError, match=r"several devices: cpu \('a.weight'\), meta:0 \('b.weight'\)"):
        module_device(module)
    assert module_device(Pair()) == "cpu"


def test_the_cli_says_why_a_cuda_device_cannot_be_used(checkpoint):
    _, directory = checkpoint
    cli = os.environ.get("WL_CLI")
    if not cli:
        pytest.skip("WL_CLI is not set (the ctest entry sets it)")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    run = subprocess.run([cli, "load", str(directory), "--device", "cuda:0", "-q"], capture_output=True, text=True)
    assert run.returncode == 1
    assert "cuda:0" in run.stderr and ("no CUDA support" in run.stderr or "no device cuda:0" in run.stderr), run.stderr
    run = subprocess.run([cli, "load", str(directory), "--device", "gpu", "-q"], capture_output=True, text=True)
    assert run.returncode == 1 and "expected cpu, cuda or cuda:N" in run.stderr, run.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_are_filled_in_place_as_cpu_ones(checkpoint):
    reference, directory = checkpoint
    module = Pair(device="cuda")
    before = module.a.weight.data_ptr()
    wl.load_into(module, directory)
    assert module.a.weight.data_ptr() == before
    for name, t in module.state_dict().items():
        assert torch.equal(t.cpu(), reference.state_dict()[name]), name
    bf16 = Pair(device="cuda").to(torch.bfloat16)
    wl.load_into(bf16, directory)
    assert torch.equal(bf16.a.weight.cpu(), reference.a.weight.to(torch.bfloat16))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_safe_open_reads_straight_into_cuda_tensors(checkpoint, tmp_path):
    reference, directory = checkpoint
    from safetensors.torch import save_file
    save_file(reference.state_dict(), tmp_path / "m.safetensors")
    with wl.safe_open(tmp_path / "m.safetensors", framework="pt", device="cuda") as f:
        t = f.get_tensor("a.weight")
        assert t.device.type == "cuda" and torch.equal(t.cpu(), reference.a.weight)
        assert torch.equal(f.get_slice("a.weight")[2:5].cpu(), reference.a.weight[2:5])
