"""verify="sha256": each file hashed from the bytes the load reads, checked against what names it. The cache
is the one huggingface_hub's own snapshot_download writes (from the fake hub of hub_server.py); the expected
digests come from hashlib; a blob with one byte changed fails the load with nothing loaded, in Python and
in the CLI."""
import hashlib
import os
import pathlib
import subprocess

import pytest

from hub_server import TOKEN, FakeHub
from named_module import Named

hh = pytest.importorskip("huggingface_hub")
torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")
wl = pytest.importorskip("weightloader")

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("WL_CLI", str(ROOT / "build" / "weightloader"))


@pytest.fixture
def snapshot(tmp_path, testdata):
    d = testdata / "hf-tiny-random-llama-2"
    files = {n: (d / n).read_bytes() for n in ("config.json", "model.safetensors")}
    hub = FakeHub(tmp_path / "cdn").start()
    try:
        hub.add_repo("org/tiny", files)
        path = hh.snapshot_download("org/tiny", cache_dir=str(tmp_path / "cache"), endpoint=hub.url, token=TOKEN)
    finally:
        hub.stop()
    return d, pathlib.Path(path)


def module_for(tensors):
    return Named({k: tuple(v.shape) for k, v in tensors.items()}, fill=float("nan"))


def corrupt(blob):
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 1
    blob.write_bytes(bytes(data))
    return hashlib.sha256(bytes(data)).hexdigest()


def test_load_into_verifies_a_huggingface_hub_snapshot(snapshot):
    original, snap = snapshot
    expected = st_torch.load_file(str(original / "model.safetensors"))
    blob = (snap / "model.safetensors").resolve()
    assert blob.name == hashlib.sha256(blob.read_bytes()).hexdigest()  # huggingface_hub's layout
    module = module_for(expected)
    result = wl.load_into(module, str(snap), verify="sha256")
    assert result.report["bytes_read"] == blob.stat().st_size  # read whole: header included, once
    for name, tensor in expected.items():
        assert torch.equal(module.state_dict()[name].to(tensor.dtype), tensor), name


def test_a_corrupted_blob_fails_with_both_digests_and_nothing_loaded(snapshot):
    original, snap = snapshot
    blob = (snap / "model.safetensors").resolve()
    got = corrupt(blob)
    tensors = st_torch.load_file(str(original / "model.safetensors"))
    with pytest.raises(wl.Error) as err:
        wl.load_into(module_for(tensors), str(snap), verify="sha256")
    assert err.value.code == "ChecksumMismatch"
    message = str(err.value)
    assert "model.safetensors" in message and got in message and blob.name in message
    wl.load_into(module_for(tensors), str(snap))  # without verify the same bytes load


def test_no_expected_digest_is_an_error(tmp_path, testdata):
    path = tmp_path / "model.safetensors"
    path.write_bytes((testdata / "hf-tiny-random-llama-2" / "model.safetensors").read_bytes())
    tensors = st_torch.load_file(str(path))
    with pytest.raises(wl.InvalidArgumentError, match="nothing names"):
        wl.load_into(module_for(tensors), str(path), verify="sha256")
    (tmp_path / "SHA256SUMS").write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  model.safetensors\n")
    wl.load_into(module_for(tensors), str(path), verify="sha256")


def test_cli_load_verify_fails_on_a_corrupted_blob(snapshot):
    _, snap = snapshot
    ok = subprocess.run([CLI, "load", str(snap), "--verify", "sha256", "-q"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    got = corrupt((snap / "model.safetensors").resolve())
    bad = subprocess.run([CLI, "load", str(snap), "--verify", "sha256", "-q"], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "ChecksumMismatch" in bad.stderr and got in bad.stderr, bad.stderr
