"""Hub downloads (weightloader download, the hf loader with a model id) against a fake hub and CDN
on loopback ports (hub_server.py): the standard cache layout, the token kept from the CDN, offline
mode, resume, verification, concurrent downloads and the choice of files."""
import hashlib
import json
import os
import pathlib
import struct
import subprocess

import pytest

from hub_server import TOKEN, FakeHub, git_blob_sha1

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("WL_CLI", str(ROOT / "build" / "weightloader"))
TOKENIZER_CONFIG = b'{"model_max_length": 2048}\n'


def split_safetensors(data, parts):
    """The tensors of a safetensors file spread over `parts` files: {name: bytes}, with an index."""
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    names = sorted(header)
    files, weight_map = {}, {}
    for i in range(parts):
        file = f"model-{i + 1:05d}-of-{parts:05d}.safetensors"
        out, blob = {}, b""
        for name in names[i::parts]:
            a, b = header[name]["data_offsets"]
            out[name] = dict(header[name], data_offsets=[len(blob), len(blob) + b - a])
            blob += data[8 + n + a:8 + n + b]
            weight_map[name] = file
        head = json.dumps(out).encode()
        files[file] = struct.pack("<Q", len(head)) + head + blob
    files["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    return files


@pytest.fixture
def tiny(testdata):
    d = testdata / "hf-tiny-random-llama-2"
    return {"config.json": (d / "config.json").read_bytes(), "model.safetensors": (d / "model.safetensors").read_bytes()}


@pytest.fixture
def hub(tmp_path, tiny):
    h = FakeHub(tmp_path / "cdn").start()
    h.add_repo("org/tiny", dict(tiny, **{"tokenizer_config.json": TOKENIZER_CONFIG, "README.md": b"# tiny\n",
                                         "pytorch_model.bin": b"not fetched: safetensors come first",
                                         "optimizer.pt": b"never fetched"}))
    yield h
    h.stop()


@pytest.fixture
def env(hub, tmp_path):
    e = dict(os.environ, HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HUB_CACHE=str(tmp_path / "cache"),
             WL_HTTP_BACKOFF_MS="10")
    e.pop("HF_HUB_OFFLINE", None)
    return e


def cli(env, *args, check=True):
    r = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def repo_dir(env, repo):
    return pathlib.Path(env["HF_HUB_CACHE"]) / ("models--" + repo.replace("/", "--"))


def test_download_writes_the_standard_cache_layout(hub, env, tiny):
    snapshot = pathlib.Path(cli(env, "download", "org/tiny").stdout.strip())
    commit = hub.repos["org/tiny"][0]
    repo = repo_dir(env, "org/tiny")
    assert snapshot == repo / "snapshots" / commit
    assert (repo / "refs" / "main").read_text() == commit
    expected = {"config.json", "model.safetensors", "tokenizer_config.json"}
    assert {p.name for p in snapshot.iterdir()} == expected
    blobs = {p.name for p in (repo / "blobs").iterdir()}
    assert blobs == {hub.etag("org/tiny", f) for f in expected}  # no partial file left
    assert hashlib.sha256(tiny["model.safetensors"]).hexdigest() in blobs
    assert git_blob_sha1(tiny["config.json"]) in blobs
    for f in expected:
        link = snapshot / f
        assert link.is_symlink() and os.readlink(link) == f"../../blobs/{hub.etag('org/tiny', f)}"
    assert (snapshot / "model.safetensors").read_bytes() == tiny["model.safetensors"]
    locks = pathlib.Path(env["HF_HUB_CACHE"]) / ".locks" / "models--org--tiny"
    assert {p.name for p in locks.iterdir()} == {hub.etag("org/tiny", f) + ".lock" for f in expected}
    # Only what a load needs was fetched: no README, no .bin, no optimizer state.
    fetched = {r.path.split("/resolve/")[1].split("/", 1)[1] for r in hub.requests("HEAD", "/resolve/")}
    assert fetched == expected
    # A second download finds everything in the cache: no file is fetched again.
    gets = len(hub.cdn.gets())
    cli(env, "download", "org/tiny")
    assert len(hub.cdn.gets()) == gets


def test_the_token_goes_to_the_hub_and_never_to_the_cdn(hub, env):
    hub.require_token = True
    cli(env, "download", "org/tiny")
    assert all(r.authorization == f"Bearer {TOKEN}" for r in hub.requests())
    assert hub.cdn.gets() and all(r.authorization is None for r in hub.cdn.requests())
    no_token = dict(env)
    no_token.pop("HF_TOKEN")
    no_token["HF_HUB_CACHE"] += "-2"
    r = cli(no_token, "download", "org/tiny", check=False)
    assert r.returncode != 0 and "access denied (HTTP 401)" in r.stderr and hub.url in r.stderr


def test_offline_mode_makes_no_request_and_names_what_is_missing(hub, env):
    offline = dict(env, HF_HUB_OFFLINE="1")
    r = cli(offline, "download", "org/tiny", check=False)
    assert r.returncode != 0 and "HF_HUB_OFFLINE" in r.stderr
    assert str(repo_dir(env, "org/tiny") / "refs" / "main") in r.stderr
    r = cli(offline, "load", "org/tiny", "-q", check=False)
    assert r.returncode != 0 and "HF_HUB_OFFLINE" in r.stderr
    assert hub.requests() == [] and hub.cdn.requests() == []
    cli(env, "download", "org/tiny")
    assert "parameters" in cli(offline, "load", "org/tiny", "-q").stdout  # the cache is enough


def test_a_dropped_connection_resumes_from_the_last_byte(hub, env, tiny):
    sha = hub.etag("org/tiny", "model.safetensors")
    hub.cdn.drop_mid_body(path=sha, times=1)
    snapshot = pathlib.Path(cli(env, "download", "org/tiny").stdout.strip())
    assert (snapshot / "model.safetensors").read_bytes() == tiny["model.safetensors"]
    gets = hub.cdn.gets(sha)
    assert len(gets) == 2 and gets[0].fault == "drop"
    assert gets[1].range == f"bytes={gets[0].sent}-{len(tiny['model.safetensors']) - 1}"
    assert hub.cdn.bytes_sent(sha) == len(tiny["model.safetensors"])  # not twice


def test_an_interrupted_download_resumes_in_the_next_run(hub, env, tiny):
    sha = hub.etag("org/tiny", "model.safetensors")
    hub.cdn.drop_mid_body(path=sha, times=1)
    r = cli(dict(env, WL_HTTP_RETRIES="1"), "download", "org/tiny", check=False)
    assert r.returncode != 0 and hub.cdn.url(sha) in r.stderr
    blobs = repo_dir(env, "org/tiny") / "blobs"
    assert not (blobs / sha).exists()
    partial = [p for p in blobs.iterdir() if p.name.startswith(sha + ".wl-partial-")]
    assert len(partial) == 1 and 0 < partial[0].stat().st_size < len(tiny["model.safetensors"])
    kept = partial[0].stat().st_size
    cli(env, "download", "org/tiny")
    gets = hub.cdn.gets(sha)
    assert len(gets) == 2 and gets[1].range == f"bytes={kept}-{len(tiny['model.safetensors']) - 1}"
    assert hub.cdn.bytes_sent(sha) == len(tiny["model.safetensors"])
    assert (blobs / sha).read_bytes() == tiny["model.safetensors"] and not partial[0].exists()


def test_wrong_content_is_never_stored(hub, env):
    hub.corrupt_on_cdn("org/tiny", "model.safetensors")
    r = cli(env, "download", "org/tiny", check=False)
    sha = hub.etag("org/tiny", "model.safetensors")
    assert r.returncode != 0 and "[ChecksumMismatch]" in r.stderr and sha in r.stderr
    blobs = repo_dir(env, "org/tiny") / "blobs"
    assert not [p for p in blobs.iterdir() if p.name.startswith(sha)]
    assert not (repo_dir(env, "org/tiny") / "snapshots").exists() or \
        not list((repo_dir(env, "org/tiny") / "snapshots").rglob("model.safetensors"))


def test_server_errors_are_retried_and_the_last_one_names_the_url(hub, env):
    hub.fail_next = [500, 503]
    cli(env, "download", "org/tiny")
    hub.fail_next = [500] * 10
    r = cli(dict(env, WL_HTTP_RETRIES="2", HF_HUB_CACHE=env["HF_HUB_CACHE"] + "-2"), "download", "org/tiny", check=False)
    assert r.returncode != 0 and "HTTP 500" in r.stderr and "gave up after 2 attempts" in r.stderr
    assert f"{hub.url}/api/models/org/tiny/revision/main" in r.stderr


def test_a_file_that_changes_during_the_download_is_discarded(hub, env, tiny):
    sha = hub.etag("org/tiny", "model.safetensors")
    hub.cdn.drop_mid_body(path=sha, times=1)
    hub.cdn.change_after_first_range(sha, b"x" * len(tiny["model.safetensors"]))
    r = cli(env, "download", "org/tiny", check=False)
    assert r.returncode != 0 and "changed on the server" in r.stderr
    blobs = repo_dir(env, "org/tiny") / "blobs"
    assert not [p for p in blobs.iterdir() if p.name.startswith(sha)]


def test_large_files_download_in_parallel_ranges(hub, env, tiny):
    size = len(tiny["model.safetensors"])
    snapshot = pathlib.Path(cli(dict(env, WL_HUB_PIECE_BYTES="32768"), "download", "org/tiny", "--concurrency", "4").stdout.strip())
    assert (snapshot / "model.safetensors").read_bytes() == tiny["model.safetensors"]
    gets = hub.cdn.gets(hub.etag("org/tiny", "model.safetensors"))
    assert len(gets) == (size + 32767) // 32768
    assert sorted(g.start for g in gets) == list(range(0, size, 32768))


def test_two_processes_downloading_at_once_give_a_correct_cache(hub, env, tiny):
    procs = [subprocess.Popen([CLI, "download", "org/tiny", "-q"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]
    snapshot = pathlib.Path(outs[0][0].strip())
    assert (snapshot / "model.safetensors").read_bytes() == tiny["model.safetensors"]
    assert (snapshot / "config.json").read_bytes() == tiny["config.json"]
    blobs = repo_dir(env, "org/tiny") / "blobs"
    assert not [p for p in blobs.iterdir() if ".wl-partial-" in p.name]


def test_only_the_shards_an_index_lists_are_fetched(hub, env, tiny):
    files = split_safetensors(tiny["model.safetensors"], 2)
    files.update({"config.json": tiny["config.json"], "model-unlisted.safetensors": b"never fetched",
                  "pytorch_model.bin": b"never fetched"})
    hub.add_repo("org/sharded", files)
    snapshot = pathlib.Path(cli(env, "download", "org/sharded").stdout.strip())
    assert {p.name for p in snapshot.iterdir()} == {"config.json", "model.safetensors.index.json",
                                                    "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    report = json.loads(cli(env, "load", "org/sharded", "--json", "-q").stdout)
    assert report["loader"] == "hf" and len(report["loaded"]) > 0


def test_include_patterns_choose_the_files(hub, env):
    snapshot = pathlib.Path(cli(env, "download", "--include", "*.json", "--include", "README.md", "org/tiny").stdout.strip())
    assert {p.name for p in snapshot.iterdir()} == {"config.json", "tokenizer_config.json", "README.md"}
    r = cli(env, "download", "org/tiny", "--include", "*.gguf", check=False)
    assert r.returncode != 0 and "[NoMatchingFiles]" in r.stderr


def test_load_of_a_model_id_downloads_it(hub, env, tiny, testdata):
    report = json.loads(cli(env, "load", "org/tiny", "--json", "-q").stdout)
    assert report["loader"] == "hf"
    # The weights were read as they arrived (test_hub_stream.py): each byte fetched once.
    assert report["bytes_fetched"] == len(tiny["model.safetensors"])
    direct = json.loads(cli(env, "load", str(testdata / "hf-tiny-random-llama-2"), "--json", "-q").stdout)
    assert report["loaded"] == direct["loaded"] and report["bytes_read"] == direct["bytes_read"]


def test_python_hf_loader_downloads_a_model_id(hub, env, monkeypatch):
    wl = pytest.importorskip("weightloader")
    for k in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "WL_HTTP_BACKOFF_MS"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    source = wl.HfWeightLoader(stream=False).get_weights("org/tiny")
    names = source.keys()
    assert any("embed_tokens" in n for n in names)
    assert (repo_dir(env, "org/tiny") / "refs" / "main").exists()


def test_unknown_model_or_revision_is_a_clear_error(hub, env):
    r = cli(env, "download", "org/nothing", check=False)
    assert r.returncode != 0 and "[FileNotFound]" in r.stderr and "org/nothing" in r.stderr
    r = cli(env, "download", "org/tiny", "--revision", "v9", check=False)
    assert r.returncode != 0 and "revision 'v9'" in r.stderr


def test_a_progress_callback_that_returns_false_cancels_the_download(hub, env, monkeypatch, tiny):
    wl = pytest.importorskip("weightloader")
    for k in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "WL_HTTP_BACKOFF_MS"):
        monkeypatch.setenv(k, env[k])
    calls = []

    def stop(done, total):
        calls.append((done, total))
        return False
    with pytest.raises(wl.CancelledError):
        wl.HfWeightLoader(stream=False).get_weights("org/tiny", progress=stop)
    assert calls and calls[0][1] == sum(len(d) for d in (tiny["config.json"], tiny["model.safetensors"], TOKENIZER_CONFIG))
    blobs = repo_dir(env, "org/tiny") / "blobs"
    assert not (blobs / hub.etag("org/tiny", "model.safetensors")).exists()
    assert not (repo_dir(env, "org/tiny") / "snapshots").exists()
    seen = []
    source = wl.HfWeightLoader(stream=False).get_weights("org/tiny", progress=lambda d, t: seen.append((d, t)) or True)
    assert len(source) > 0 and seen[-1][0] == seen[-1][1]


def test_llm_and_inspect_take_a_model_id(hub, env, monkeypatch):
    r = cli(env, "inspect", "org/tiny", "--json")
    assert json.loads(r.stdout)["loader"] == "hf"
    wl = pytest.importorskip("weightloader")
    for k in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "WL_HTTP_BACKOFF_MS"):
        monkeypatch.setenv(k, env[k])
    llm = wl.LLM(model="org/tiny")
    assert llm is not None


def test_a_cached_snapshot_without_weights_gets_them_when_loaded(hub, env):
    snapshot = pathlib.Path(cli(env, "download", "org/tiny", "--include", "config.json").stdout.strip())
    assert {p.name for p in snapshot.iterdir()} == {"config.json"}
    heads = len(hub.requests("HEAD"))
    report = json.loads(cli(env, "load", "org/tiny", "--json", "-q").stdout)
    assert report["loader"] == "hf" and (snapshot / "model.safetensors").is_symlink()
    assert len(hub.requests("HEAD")) > heads
    assert len(hub.cdn.gets(hub.etag("org/tiny", "config.json"))) == 0  # config.json came from the hub, once
    assert len([r for r in hub.requests("GET") if r.path.endswith("/config.json")]) == 1


def test_empty_files_and_files_in_folders_link_from_their_depth(hub, env):
    hub.add_repo("org/nested", {"config.json": b"{}", "tokenizer.json": b"", "onnx/sub/model.onnx": b"onnx bytes"})
    snapshot = pathlib.Path(cli(env, "download", "org/nested", "--include", "*").stdout.strip())
    assert (snapshot / "tokenizer.json").read_bytes() == b""
    nested = snapshot / "onnx" / "sub" / "model.onnx"
    assert os.readlink(nested) == f"../../../../blobs/{git_blob_sha1(b'onnx bytes')}" and nested.read_bytes() == b"onnx bytes"
