"""load_into: a torch module filled in place from a checkpoint, as load_state_dict would leave it."""
import errno
import os
import subprocess
import sys

import pytest
import torch

import weightloader as wl


class TinyLlama(torch.nn.Module):
    """A small Llama in plain torch: embedding, RMSNorm, attention with rotary, SwiGLU MLP."""

    def __init__(self, vocab=64, dim=32, layers=2, heads=4, hidden=48):
        super().__init__()
        self.heads = heads
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            layer = torch.nn.Module()
            layer.input_layernorm = torch.nn.Parameter(torch.ones(dim))
            layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj = (torch.nn.Linear(dim, dim, bias=False) for _ in range(4))
            layer.post_attention_layernorm = torch.nn.Parameter(torch.ones(dim))
            layer.gate_proj, layer.up_proj = torch.nn.Linear(dim, hidden, bias=False), torch.nn.Linear(dim, hidden, bias=False)
            layer.down_proj = torch.nn.Linear(hidden, dim, bias=False)
            self.layers.append(layer)
        self.norm = torch.nn.Parameter(torch.ones(dim))
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)

    @staticmethod
    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    def forward(self, ids):
        x = self.embed_tokens(ids)
        n, d = ids.shape[0], x.shape[-1]
        hd = d // self.heads
        pos = torch.arange(n, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, hd, 2) / hd))
        cos, sin = pos.cos(), pos.sin()

        def rope(t):
            t = t.view(n, self.heads, hd // 2, 2)
            a, b = t[..., 0], t[..., 1]
            return torch.stack((a * cos[:, None] - b * sin[:, None], a * sin[:, None] + b * cos[:, None]), -1).view(n, d)
        mask = torch.full((n, n), float("-inf")).triu(1)
        for layer in self.layers:
            h = self.rms(x, layer.input_layernorm)
            q, k, v = rope(layer.q_proj(h)), rope(layer.k_proj(h)), layer.v_proj(h)
            q, k, v = (t.view(n, self.heads, hd).transpose(0, 1) for t in (q, k, v))
            att = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + mask, -1) @ v
            x = x + layer.o_proj(att.transpose(0, 1).reshape(n, d))
            h = self.rms(x, layer.post_attention_layernorm)
            x = x + layer.down_proj(torch.nn.functional.silu(layer.gate_proj(h)) * layer.up_proj(h))
        return self.lm_head(self.rms(x, self.norm))


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(1)
    reference = TinyLlama()
    torch.save(reference.state_dict(), tmp_path / "pytorch_model.bin")
    return reference, tmp_path


def test_identical_logits_after_load_into_and_after_load_state_dict(checkpoint):
    reference, directory = checkpoint
    ids = torch.tensor([1, 5, 9, 33, 2])
    torch.manual_seed(2)
    ours, theirs = TinyLlama(), TinyLlama()
    missing, unexpected = wl.load_into(ours, directory)
    assert missing == [] and unexpected == []
    theirs.load_state_dict(torch.load(directory / "pytorch_model.bin"))
    with torch.no_grad():
        assert torch.equal(ours(ids), theirs(ids))
        assert torch.equal(ours(ids), reference(ids))


def test_fills_the_existing_tensors_in_place(checkpoint):
    reference, directory = checkpoint
    model = TinyLlama()
    before = {name: t.data_ptr() for name, t in model.state_dict().items()}
    wl.load_into(model, directory / "pytorch_model.bin")
    assert {name: t.data_ptr() for name, t in model.state_dict().items()} == before
    assert torch.equal(model.norm, reference.norm)


def test_a_bf16_module_from_an_f32_file(checkpoint):
    reference, directory = checkpoint
    model = TinyLlama().to(torch.bfloat16)
    wl.load_into(model, directory)
    assert model.lm_head.weight.dtype == torch.bfloat16
    assert torch.equal(model.lm_head.weight, reference.lm_head.weight.to(torch.bfloat16))
    model = TinyLlama()
    wl.load_into(model, directory, dtype="bf16")
    assert model.norm.dtype == torch.bfloat16


def test_strictness_and_the_returned_keys(checkpoint):
    _, directory = checkpoint
    model = TinyLlama()
    model.extra = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(ValueError, match="extra"):
        wl.load_into(model, directory)
    missing, unexpected = wl.load_into(model, directory, strict=False)
    assert missing == ["extra"] and unexpected == []


def test_name_maps_rename_prefixes(checkpoint):
    reference, directory = checkpoint
    wrapped = torch.nn.Module()
    wrapped.model = TinyLlama()
    missing, unexpected = wl.load_into(wrapped, directory, strict=False)
    assert len(missing) == len(unexpected) > 0  # without the prefix nothing matches
    wl.load_into(wrapped, directory, add_prefix="model.")
    assert torch.equal(wrapped.model.norm, reference.norm)
    wl.load_into(wrapped, directory, name_map={"layers.": "model.layers.", "embed_tokens.weight": "model.embed_tokens.weight",
                                               "norm": "model.norm", "lm_head.weight": "model.lm_head.weight"})
    assert torch.equal(wrapped.model.layers[1].down_proj.weight, reference.layers[1].down_proj.weight)


def test_shape_mismatches_name_both_shapes(checkpoint):
    _, directory = checkpoint
    model = TinyLlama(vocab=65)
    with pytest.raises(ValueError, match=r"\[64, 32\].*\[65, 32\]"):
        wl.load_into(model, directory)


def test_non_contiguous_parameters_are_refused_not_copied(checkpoint):
    _, directory = checkpoint
    model = TinyLlama()
    model.lm_head.weight.data = model.lm_head.weight.data.t().contiguous().t()
    with pytest.raises(ValueError, match="not contiguous"):
        wl.load_into(model, directory)


def test_a_file_the_cli_converted(checkpoint, tmp_path):
    reference, directory = checkpoint
    cli = os.environ.get("WL_CLI")
    if not cli:
        pytest.skip("WL_CLI is not set (the ctest entry sets it)")
    out = tmp_path / "model.safetensors"
    subprocess.run([cli, "convert", str(directory / "pytorch_model.bin"), str(out), "--to", "safetensors"], check=True,
                   capture_output=True)
    model = TinyLlama()
    wl.load_into(model, out)
    assert torch.equal(model.layers[0].q_proj.weight, reference.layers[0].q_proj.weight)


def test_hostile_files_are_clean_exceptions(tmp_path):
    for name, data in {"huge.safetensors": (1 << 62).to_bytes(8, "little") + b"{}",
                       "empty.safetensors": b"", "junk.bin": b"\x89PNG\r\n\x1a\n" + b"\0" * 64}.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(wl.Error):
            wl.load_into(TinyLlama(), path)


def test_threads_load_concurrently(checkpoint):
    import threading
    reference, directory = checkpoint
    models = [TinyLlama() for _ in range(4)]
    errors = []

    def work(m):
        try:
            wl.load_into(m, directory)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(torch.equal(m.lm_head.weight, reference.lm_head.weight) for m in models)


def test_keyboard_interrupt_cancels_a_load_cleanly(checkpoint):
    reference, directory = checkpoint

    def interrupt(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        wl.load_into(TinyLlama(), directory, progress=interrupt)
    model = TinyLlama()  # the library is still usable afterwards
    wl.load_into(model, directory)
    assert torch.equal(model.norm, reference.norm)


def _io_uring_refused(err):
    return isinstance(err, wl.IoError) and err.errno in (errno.EPERM, errno.ENOSYS)


@pytest.mark.parametrize("io", ["pread", "direct", "uring"])
def test_every_io_mode_fills_the_module_alike(checkpoint, io):
    reference, directory = checkpoint
    for dtype in (torch.float32, torch.bfloat16):  # straight, then converted on the way
        model = TinyLlama().to(dtype)
        try:
            result = wl.load_into(model, directory, io=io)
        except wl.IoError as e:
            if io == "uring" and _io_uring_refused(e):
                pytest.skip(f"io_uring is refused in this process: {e}")
            raise
        assert result.report.io_mode == io
        for name, t in reference.state_dict().items():
            assert torch.equal(model.state_dict()[name], t.to(dtype)), name


# io_uring refused as a container's seccomp profile refuses it (EPERM for io_uring_setup), in a child
# process: io=uring is an IoError naming the file and the errno; io=auto still loads.
_REFUSED_IO_URING = r"""
import ctypes, errno, struct, sys, torch, weightloader as wl
sys.path.insert(0, sys.argv[2])
from test_load_into import TinyLlama
libc = ctypes.CDLL(None, use_errno=True)
program = [(0x20, 0, 0, 0),  # load the syscall number
           (0x15, 0, 1, 425),  # io_uring_setup (425 on every architecture)?
           (0x06, 0, 0, 0x00050000 | errno.EPERM),  # then fail it with EPERM
           (0x06, 0, 0, 0x7fff0000)]  # else allow
code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in program))
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(code))), 0, 0) == 0  # seccomp filter
try:
    wl.load_into(TinyLlama(), sys.argv[1], io="uring")
    sys.exit("io=uring loaded")
except wl.IoError as e:
    print(f"{type(e).__name__} errno={e.errno}: {e}")
print("auto:", wl.load_into(TinyLlama(), sys.argv[1]).report.io_mode)
"""


def test_io_uring_refused_is_an_io_error_naming_the_file_and_auto_reads_on(checkpoint):
    _, directory = checkpoint
    out = subprocess.run([sys.executable, "-c", _REFUSED_IO_URING, str(directory), os.path.dirname(__file__)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("PermissionDeniedError errno=1: ") and str(directory / "pytorch_model.bin") in first, first
    assert "io_uring_setup: Operation not permitted" in first and "use io=direct or io=auto" in first, first
    assert second in ("auto: pread", "auto: direct"), second
