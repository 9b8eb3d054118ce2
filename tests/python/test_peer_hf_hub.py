"""weightloader's hub cache against the real huggingface_hub client (the pinned version in the venv),
both ways, with the fake hub and CDN of hub_server.py on loopback ports:

1. huggingface_hub reads the cache `weightloader download` writes: scan_cache_dir lists the repo
   (files, sizes, refs/main -> commit) with no warnings, and snapshot_download / hf_hub_download /
   try_to_load_from_cache with local_files_only find our snapshot and files.
2. weightloader reads the cache huggingface_hub's snapshot_download writes: by model id (Python
   HfWeightLoader(download=False) and the CLI with HF_HUB_OFFLINE=1), by revision (a commit), by
   snapshot path, a sharded repo through its index, and a `weightloader download` into that cache
   fetches nothing again; the tensors equal the source files."""
import json
import os
import pathlib

import pytest

from hub_server import TOKEN, FakeHub, git_blob_sha1
from test_hub import cli, split_safetensors

hh = pytest.importorskip("huggingface_hub")
torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

TOKENIZER_CONFIG = b'{"model_max_length": 2048}\n'
# What `weightloader download org/tiny` fetches by default (README.md is left on the hub).
LOAD_FILES = {"config.json", "model.safetensors", "tokenizer_config.json"}


@pytest.fixture
def tiny(testdata):
    d = testdata / "hf-tiny-random-llama-2"
    return {"config.json": (d / "config.json").read_bytes(), "model.safetensors": (d / "model.safetensors").read_bytes(),
            "tokenizer_config.json": TOKENIZER_CONFIG}


@pytest.fixture
def source_tensors(testdata):
    return st_torch.load_file(str(testdata / "hf-tiny-random-llama-2" / "model.safetensors"))


@pytest.fixture
def hub(tmp_path, tiny):
    h = FakeHub(tmp_path / "cdn").start()
    try:
        h.add_repo("org/tiny", dict(tiny, **{"README.md": b"# tiny\n"}))
        yield h
    finally:
        h.stop()


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


@pytest.fixture
def env(hub, cache):
    e = dict(os.environ, HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HUB_CACHE=str(cache), WL_HTTP_BACKOFF_MS="10",
             HF_HUB_DISABLE_TELEMETRY="1")
    e.pop("HF_HUB_OFFLINE", None)
    return e


@pytest.fixture
def hf_env(env, monkeypatch):
    """The process environment the Python module and huggingface_hub see (huggingface_hub reads most
    of these at import, so its calls below also name endpoint / cache_dir explicitly)."""
    for k in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "WL_HTTP_BACKOFF_MS", "HF_HUB_DISABLE_TELEMETRY"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return env


def repo_dir(cache, repo):
    return pathlib.Path(cache) / ("models--" + repo.replace("/", "--"))


def hf_snapshot_download(hub, cache, repo="org/tiny", **kw):
    """huggingface_hub's own download from the fake hub into `cache`."""
    return pathlib.Path(hh.snapshot_download(repo, cache_dir=str(cache), endpoint=hub.url, token=TOKEN, **kw))


def assert_same_tensors(weights, expected):
    assert set(weights.keys()) == set(expected)
    for name, tensor in expected.items():
        got = weights[name]
        assert got.dtype == tensor.dtype and tuple(got.shape) == tuple(tensor.shape), name
        assert torch.equal(got, tensor), name


# 1. huggingface_hub reads the cache weightloader writes.

def test_scan_cache_dir_reads_our_download(hub, env, cache, tiny):
    snapshot = pathlib.Path(cli(env, "download", "org/tiny", "-q").stdout.strip())
    commit = hub.repos["org/tiny"][0]
    info = hh.scan_cache_dir(cache)
    assert list(info.warnings) == []  # no CorruptedCacheException: every folder is where it expects
    assert len(info.repos) == 1
    repo = next(iter(info.repos))
    assert (repo.repo_id, repo.repo_type) == ("org/tiny", "model")
    assert pathlib.Path(repo.repo_path) == repo_dir(cache, "org/tiny")
    assert repo.nb_files == len(LOAD_FILES)
    assert repo.size_on_disk == sum(len(tiny[f]) for f in LOAD_FILES)
    assert set(repo.refs) == {"main"}
    assert len(repo.revisions) == 1
    rev = next(iter(repo.revisions))
    assert rev.commit_hash == commit and set(rev.refs) == {"main"}
    assert pathlib.Path(rev.snapshot_path) == snapshot
    assert repo.refs["main"].commit_hash == commit
    files = {f.file_name: f for f in rev.files}
    assert set(files) == LOAD_FILES
    for name, f in files.items():
        assert f.size_on_disk == len(tiny[name]), name
        assert pathlib.Path(f.file_path) == snapshot / name
        assert pathlib.Path(f.blob_path) == repo_dir(cache, "org/tiny") / "blobs" / hub.etag("org/tiny", name)
        assert pathlib.Path(f.blob_path).read_bytes() == tiny[name]


def test_huggingface_hub_finds_our_snapshot_and_files_offline(hub, env, cache, tiny):
    snapshot = pathlib.Path(cli(env, "download", "org/tiny", "-q").stdout.strip())
    commit = hub.repos["org/tiny"][0]
    before = (len(hub.requests()), len(hub.cdn.requests()))
    # local_files_only: resolves refs/main -> snapshots/<commit> without any request.
    found = hh.snapshot_download("org/tiny", cache_dir=str(cache), local_files_only=True, endpoint=hub.url)
    assert pathlib.Path(found) == snapshot
    assert pathlib.Path(hh.snapshot_download("org/tiny", revision=commit, cache_dir=str(cache),
                                             local_files_only=True, endpoint=hub.url)) == snapshot
    for name in LOAD_FILES:
        path = pathlib.Path(hh.hf_hub_download("org/tiny", name, cache_dir=str(cache), local_files_only=True,
                                               endpoint=hub.url))
        assert path == snapshot / name and path.read_bytes() == tiny[name]
        assert pathlib.Path(hh.try_to_load_from_cache("org/tiny", name, cache_dir=str(cache))) == snapshot / name
    # A file we did not download is reported as missing, not as found.
    assert hh.try_to_load_from_cache("org/tiny", "README.md", cache_dir=str(cache)) is None
    with pytest.raises(hh.errors.LocalEntryNotFoundError):
        hh.hf_hub_download("org/tiny", "README.md", cache_dir=str(cache), local_files_only=True, endpoint=hub.url)
    assert (len(hub.requests()), len(hub.cdn.requests())) == before


def test_huggingface_hub_online_reuses_our_blobs(hub, env, cache, tiny):
    """huggingface_hub online against our cache: the blobs we stored are the ones it looks for (same
    names: sha256 for LFS files, git sha1 otherwise), so it downloads only what we did not."""
    cli(env, "download", "org/tiny", "-q")
    cdn_gets, resolve_gets = len(hub.cdn.gets()), len(hub.requests("GET", "/resolve/"))
    snapshot = hf_snapshot_download(hub, cache)
    assert snapshot == repo_dir(cache, "org/tiny") / "snapshots" / hub.repos["org/tiny"][0]
    assert len(hub.cdn.gets()) == cdn_gets  # model.safetensors was not fetched again
    got = [r.path.rsplit("/", 1)[1] for r in hub.requests("GET", "/resolve/")[resolve_gets:]]
    assert got == ["README.md"]  # only the file we had not downloaded
    assert (snapshot / "README.md").read_bytes() == b"# tiny\n"
    assert (snapshot / "model.safetensors").read_bytes() == tiny["model.safetensors"]
    assert list(hh.scan_cache_dir(cache).warnings) == []


# 2. weightloader reads the cache huggingface_hub writes.

def test_python_loader_reads_a_huggingface_hub_download_by_id(hub, hf_env, cache, source_tensors):
    wl = pytest.importorskip("weightloader")
    snapshot = hf_snapshot_download(hub, cache)
    commit = hub.repos["org/tiny"][0]
    assert snapshot == repo_dir(cache, "org/tiny") / "snapshots" / commit
    assert (repo_dir(cache, "org/tiny") / "refs" / "main").read_text() == commit
    before = (len(hub.requests()), len(hub.cdn.requests()))
    weights = wl.HfWeightLoader(download=False).get_weights("org/tiny")
    assert_same_tensors(weights, source_tensors)
    assert_same_tensors(wl.HfWeightLoader(cache_dir=str(cache), download=False).get_weights("org/tiny"), source_tensors)
    assert_same_tensors(wl.HfWeightLoader(revision=commit, download=False).get_weights("org/tiny"), source_tensors)
    # With downloads allowed too: everything is in the cache, so nothing is fetched.
    assert_same_tensors(wl.HfWeightLoader().get_weights("org/tiny", progress=False), source_tensors)
    assert len(hub.cdn.requests()) == before[1]
    assert not [r for r in hub.requests("GET", "/resolve/")[before[0]:]]


def test_python_loader_reads_a_huggingface_hub_snapshot_path(hub, hf_env, cache, source_tensors):
    wl = pytest.importorskip("weightloader")
    snapshot = hf_snapshot_download(hub, cache)
    assert (snapshot / "model.safetensors").is_symlink()  # the usual layout: links into blobs/
    assert_same_tensors(wl.HfWeightLoader().get_weights(str(snapshot)), source_tensors)
    assert_same_tensors(wl.HfWeightLoader().get_weights(snapshot / "model.safetensors"), source_tensors)


def test_a_commit_only_download_loads_by_revision(hub, hf_env, cache, source_tensors):
    """snapshot_download(revision=<commit>) writes no refs/main: a load by that commit still finds it."""
    wl = pytest.importorskip("weightloader")
    commit = hub.repos["org/tiny"][0]
    hf_snapshot_download(hub, cache, revision=commit)
    assert not (repo_dir(cache, "org/tiny") / "refs" / "main").exists()
    assert_same_tensors(wl.HfWeightLoader(revision=commit, download=False).get_weights("org/tiny"), source_tensors)
    offline = dict(hf_env, HF_HUB_OFFLINE="1")
    snapshot = cli(offline, "download", "org/tiny", "--revision", commit, "-q").stdout.strip()
    assert pathlib.Path(snapshot) == repo_dir(cache, "org/tiny") / "snapshots" / commit
    report = json.loads(cli(offline, "load", snapshot, "--json", "-q").stdout)
    assert sorted(report["loaded"]) == sorted(source_tensors)


def test_cli_loads_a_huggingface_hub_download_offline(hub, env, cache, testdata):
    snapshot = hf_snapshot_download(hub, cache)
    offline = dict(env, HF_HUB_OFFLINE="1")
    before = (len(hub.requests()), len(hub.cdn.requests()))
    direct = json.loads(cli(env, "load", str(testdata / "hf-tiny-random-llama-2"), "--json", "-q").stdout)
    by_id = json.loads(cli(offline, "load", "org/tiny", "--json", "-q").stdout)
    by_path = json.loads(cli(offline, "load", str(snapshot), "--json", "-q").stdout)
    for report in (by_id, by_path):
        assert report["loader"] == "hf" and report["missing"] == [] and report["bytes_fetched"] == 0
        assert report["loaded"] == direct["loaded"] and report["bytes_read"] == direct["bytes_read"]
    # `download` offline finds huggingface_hub's snapshot as it is.
    assert pathlib.Path(cli(offline, "download", "org/tiny", "-q").stdout.strip()) == snapshot
    assert (len(hub.requests()), len(hub.cdn.requests())) == before  # offline: no request at all


def test_our_download_into_a_huggingface_hub_cache_fetches_nothing_again(hub, env, cache, tiny):
    snapshot = hf_snapshot_download(hub, cache)
    cdn_gets, resolve_gets = len(hub.cdn.gets()), len(hub.requests("GET", "/resolve/"))
    assert pathlib.Path(cli(env, "download", "org/tiny", "-q").stdout.strip()) == snapshot
    assert len(hub.cdn.gets()) == cdn_gets and len(hub.requests("GET", "/resolve/")) == resolve_gets
    for name in LOAD_FILES:
        assert (snapshot / name).read_bytes() == tiny[name]
        assert os.readlink(snapshot / name) == f"../../blobs/{hub.etag('org/tiny', name)}"
    assert list(hh.scan_cache_dir(cache).warnings) == []


def test_a_sharded_huggingface_hub_download_loads_through_its_index(hub, hf_env, cache, tiny, source_tensors):
    wl = pytest.importorskip("weightloader")
    files = split_safetensors(tiny["model.safetensors"], 2)
    files["config.json"] = tiny["config.json"]
    hub.add_repo("org/sharded", files)
    snapshot = hf_snapshot_download(hub, cache, repo="org/sharded")
    assert {p.name for p in snapshot.iterdir()} == set(files)
    for name, data in files.items():
        target = repo_dir(cache, "org/sharded") / "blobs" / hub.etag("org/sharded", name)
        assert (snapshot / name).resolve() == target.resolve() and target.read_bytes() == data
    assert_same_tensors(wl.HfWeightLoader(download=False).get_weights("org/sharded"), source_tensors)
    report = json.loads(cli(dict(hf_env, HF_HUB_OFFLINE="1"), "load", "org/sharded", "--json", "-q").stdout)
    assert report["loader"] == "hf" and sorted(report["loaded"]) == sorted(source_tensors)


def test_blob_names_match_between_the_two(hub, env, tmp_path, tiny):
    """Two caches of the same repo, one written by each: the same refs, snapshot, links and blobs."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    cli(dict(env, HF_HUB_CACHE=str(ours)), "download", "org/tiny", "-q")
    hf_snapshot_download(hub, theirs, allow_patterns=sorted(LOAD_FILES))

    def layout(cache):
        repo = repo_dir(cache, "org/tiny")
        links = {str(p.relative_to(repo)): os.readlink(p) for p in (repo / "snapshots").rglob("*") if p.is_symlink()}
        blobs = {p.name: p.read_bytes() for p in (repo / "blobs").iterdir()}
        return (repo / "refs" / "main").read_text(), links, blobs
    assert layout(ours) == layout(theirs)
    assert git_blob_sha1(tiny["config.json"]) in layout(ours)[2]
