"""A model id loaded while it downloads (the hf loader's stream=true, its default): the weights
reach the parameters as their bytes arrive from the fake hub's CDN (hub_server.py), the same bytes
are written through into the standard cache, which huggingface_hub itself then reads; an
interrupted load resumes, a partly cached model fetches only what it lacks, and bytes that do not
match their sha256 are never reported loaded nor stored."""
import gc
import hashlib
import json
import pathlib

import pytest

from hub_server import TOKEN, FakeHub
from test_hub import cli, repo_dir, split_safetensors, tiny  # noqa: F401  (tiny: a fixture)

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")
wl = pytest.importorskip("weightloader")
hf_hub = pytest.importorskip("huggingface_hub")

from named_module import Named  # noqa: E402

N_TENSORS = 16  # of 1 MiB each


def big_tensors():
    return {f"layers.{i}.weight": torch.arange(512 * 512, dtype=torch.float32).reshape(512, 512) * (i + 1)
            for i in range(N_TENSORS)}


@pytest.fixture
def hub(tmp_path, tiny):  # noqa: F811
    h = FakeHub(tmp_path / "cdn").start()
    h.add_repo("org/big", {"config.json": b"{}\n", "model.safetensors": st.save(big_tensors())})
    sharded = split_safetensors(tiny["model.safetensors"], 2)
    sharded["config.json"] = tiny["config.json"]
    h.add_repo("org/sharded", sharded)
    yield h
    h.stop()


@pytest.fixture
def env(hub, tmp_path, monkeypatch):
    e = {"HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN, "HF_HUB_CACHE": str(tmp_path / "cache"), "WL_HTTP_BACKOFF_MS": "10"}
    for k, v in e.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    import os
    return dict(os.environ)


def empty_module():
    return Named({name: t.shape for name, t in big_tensors().items()}, fill=float("nan"))


def test_parameters_fill_while_the_download_is_held_back(hub, env):
    data = hub.repos["org/big"][1]["model.safetensors"]
    sha = hub.etag("org/big", "model.safetensors")
    hub.cdn.hold(sha, at=len(data) * 3 // 4, timeout=20)
    loaded_while_held = []

    def progress(done, total):
        if done > 0 and not loaded_while_held:
            loaded_while_held.append(done)
            hub.cdn.release()
        return True
    module = empty_module()
    wl.load_into(module, "org/big", loader=wl.HfWeightLoader(), progress=progress)
    # Bytes reached the parameters while the CDN still held back the file's last quarter.
    assert loaded_while_held and 0 < loaded_while_held[0] < len(data)
    assert [r.fault for r in hub.cdn.gets(sha)] == ["held"]
    for name, t in big_tensors().items():
        assert torch.equal(module.state_dict()[name], t), name
    # The same bytes are in the standard cache, as huggingface_hub reads it.
    repo = repo_dir(env, "org/big")
    assert (repo / "blobs" / sha).read_bytes() == data
    assert not [p for p in (repo / "blobs").iterdir() if ".wl-partial-" in p.name]
    info = hf_hub.scan_cache_dir(env["HF_HUB_CACHE"])
    (cached,) = [r for r in info.repos if r.repo_id == "org/big"]
    (revision,) = cached.revisions
    assert revision.commit_hash == hub.repos["org/big"][0] and "main" in revision.refs
    assert {f.file_name for f in revision.files} == {"config.json", "model.safetensors"}
    path = hf_hub.hf_hub_download("org/big", "model.safetensors", cache_dir=env["HF_HUB_CACHE"], local_files_only=True)
    assert hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest() == sha
    # The next start is a local load: nothing more from the CDN.
    gets = len(hub.cdn.gets())
    report = json.loads(cli(env, "load", "org/big", "--json", "-q").stdout)
    assert len(hub.cdn.gets()) == gets and report["bytes_fetched"] == 0 and len(report["loaded"]) == N_TENSORS


def test_a_streamed_load_reports_the_bytes_it_fetched_and_verifies_them(hub, env):
    data = hub.repos["org/big"][1]["model.safetensors"]
    report = json.loads(cli(env, "load", "org/big", "--json", "-q", "--verify", "sha256").stdout)
    assert report["bytes_fetched"] == len(data) and len(report["loaded"]) == N_TENSORS


def test_bytes_that_do_not_match_their_sha256_are_not_loaded_nor_stored(hub, env):
    hub.corrupt_on_cdn("org/big", "model.safetensors")
    sha = hub.etag("org/big", "model.safetensors")
    with pytest.raises(wl.Error) as e:
        wl.load_into(empty_module(), "org/big", loader=wl.HfWeightLoader())
    assert e.value.code == "ChecksumMismatch" and sha in str(e.value) and "model.safetensors" in str(e.value)
    r = cli(env, "load", "org/big", "-q", check=False)
    assert r.returncode != 0 and "[ChecksumMismatch]" in r.stderr and sha in r.stderr
    repo = repo_dir(env, "org/big")
    assert not [p for p in (repo / "blobs").iterdir() if p.name.startswith(sha)]
    assert not list((repo / "snapshots").rglob("model.safetensors"))


def test_an_interrupted_streamed_load_resumes_where_it_stopped(hub, env):
    data = hub.repos["org/big"][1]["model.safetensors"]
    sha = hub.etag("org/big", "model.safetensors")
    hub.cdn.drop_mid_body(path=sha, times=1)
    r = cli(dict(env, WL_HTTP_RETRIES="1"), "load", "org/big", "-q", check=False)
    assert r.returncode != 0 and hub.cdn.url(sha) in r.stderr
    blobs = repo_dir(env, "org/big") / "blobs"
    (partial,) = [p for p in blobs.iterdir() if p.name.startswith(sha + ".wl-partial-")]
    kept = partial.stat().st_size
    assert 0 < kept < len(data)
    report = json.loads(cli(env, "load", "org/big", "--json", "-q").stdout)
    assert len(report["loaded"]) == N_TENSORS and report["bytes_fetched"] == len(data) - kept
    assert hub.cdn.gets(sha)[-1].range == f"bytes={kept}-{len(data) - 1}"
    assert (blobs / sha).read_bytes() == data and not partial.exists()


def test_a_cancelled_streamed_load_stops_the_download_and_keeps_what_arrived(hub, env):
    data = hub.repos["org/big"][1]["model.safetensors"]
    sha = hub.etag("org/big", "model.safetensors")
    hub.cdn.hold(sha, at=len(data) * 3 // 4, timeout=20)  # past the load's first 8 MiB read
    with pytest.raises(wl.CancelledError):
        wl.load_into(empty_module(), "org/big", loader=wl.HfWeightLoader(), progress=lambda done, total: done == 0)
    gc.collect()  # the load's source, and with it the download, is gone: the stalled transfer was dropped
    blobs = repo_dir(env, "org/big") / "blobs"
    assert not (blobs / sha).exists()
    (partial,) = [p for p in blobs.iterdir() if p.name.startswith(sha + ".wl-partial-")]
    kept = partial.stat().st_size
    assert 8 << 20 <= kept <= len(data) * 3 // 4  # what the load had read, at most what the CDN had sent
    hub.cdn.reset()
    module = empty_module()
    wl.load_into(module, "org/big", loader=wl.HfWeightLoader())
    assert torch.equal(module.state_dict()["layers.15.weight"], big_tensors()["layers.15.weight"])
    assert hub.cdn.gets(sha)[-1].range == f"bytes={kept}-{len(data) - 1}"
    assert (blobs / sha).read_bytes() == data


def test_a_partly_cached_model_fetches_only_the_shards_it_lacks(hub, env, testdata):
    cli(env, "download", "org/sharded", "--include", "*.json", "--include", "model-00001-of-00002.safetensors")
    first = hub.etag("org/sharded", "model-00001-of-00002.safetensors")
    second = hub.etag("org/sharded", "model-00002-of-00002.safetensors")
    assert hub.cdn.gets(first) and not hub.cdn.gets(second)
    gets_first = len(hub.cdn.gets(first))
    report = json.loads(cli(env, "load", "org/sharded", "--json", "-q").stdout)
    assert len(hub.cdn.gets(first)) == gets_first and hub.cdn.gets(second)
    direct = json.loads(cli(env, "load", str(testdata / "hf-tiny-random-llama-2"), "--json", "-q").stdout)
    assert sorted(report["loaded"]) == sorted(direct["loaded"])
    size = len(hub.repos["org/sharded"][1]["model-00002-of-00002.safetensors"])
    assert report["bytes_fetched"] == size


def test_stream_false_downloads_the_whole_snapshot_first(hub, env):
    seen = []
    source = wl.HfWeightLoader(stream=False).get_weights("org/big", progress=lambda d, t: seen.append((d, t)) or True)
    assert len(source) == N_TENSORS and seen and seen[-1][0] == seen[-1][1]
    assert (repo_dir(env, "org/big") / "blobs" / hub.etag("org/big", "model.safetensors")).exists()
