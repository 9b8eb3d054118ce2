"""Remote checkpoints: http(s):// and s3:// URLs are names like any path, everywhere (the loaders,
load_into, safe_open, load_file, the CLI), read with ranged requests, retried and resumed, and never
give wrong data: against nginx, two S3 servers that check signatures as AWS does (moto with IAM
authentication on, and s3rver) and a fault-injecting server of the tests' own (see remote_servers.py). Everything is on 127.0.0.1; the servers are started here and always stopped.

The `test_harness_*` tests check the servers themselves and need nothing from the library."""
import functools
import http.client
import itertools
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import pytest
import torch

import weightloader as wl
from remote_servers import (BUCKET, HOST, Credentials, FaultServer, Moto, Nginx, moto_command, s3_error_code,
                            sigv4_headers, use_s3)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI") or ROOT / "build" / "weightloader")
MiB = 1 << 20
# What a ranged load may read beyond the bytes it needs: the header read (speculative read-ahead
# included) and request alignment. Opening a checkpoint reads at most this; one tensor at most its
# bytes plus this.
SLACK = 2 * MiB
# The retry policy the library reads from the environment, kept short here (read it per load, not
# once per process: these are set per test).
QUICK_RETRIES = {"WL_HTTP_RETRIES": "3", "WL_HTTP_BACKOFF_MS": "10"}
BOUND_S = 30.0  # a failing load must fail well within this


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """The short retry policy, and no proxy between the library and the loopback servers."""
    for k, v in QUICK_RETRIES.items():
        monkeypatch.setenv(k, v)
    for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


# --------------------------------------------------------------------------------------------------
# Checkpoints, written once per session

@pytest.fixture(scope="session")
def ckpt(tmp_path_factory):
    d = tmp_path_factory.mktemp("remote-ckpt")
    g = torch.Generator().manual_seed(7)
    out = {"dir": d}

    single = {
        "embed.weight": torch.randn(64, 48, generator=g),
        "norm.weight": torch.randn(33, generator=g).half(),
        "proj.weight": torch.randn(7, 5, generator=g).to(torch.bfloat16),
        "proj.bias": torch.randn(5, generator=g).double(),
        "ids": torch.randint(-2**40, 2**40, (10,), generator=g, dtype=torch.int64),
        "mask": torch.randint(0, 255, (100,), generator=g, dtype=torch.uint8),
        "cube": torch.randint(-1000, 1000, (3, 3, 3), generator=g, dtype=torch.int32),
    }
    wl.save_file(single, d / "model.safetensors", metadata={"format": "pt", "origin": "test_remote"})
    out["safetensors"] = d / "model.safetensors"

    shards = {
        "model-00001-of-00003.safetensors": {"model.embed_tokens.weight": torch.randn(128, 32, generator=g),
                                             "model.norm.weight": torch.randn(32, generator=g)},
        "model-00002-of-00003.safetensors": {"model.layers.0.mlp.weight": torch.randn(64, 32, generator=g).half(),
                                             "model.layers.0.attn.weight": torch.randn(32, 32, generator=g)},
        "model-00003-of-00003.safetensors": {"lm_head.weight": torch.randn(128, 32, generator=g).to(torch.bfloat16)},
    }
    sharded = d / "sharded"
    sharded.mkdir()
    weight_map = {}
    for fname, tensors in shards.items():
        wl.save_file(tensors, sharded / fname)
        weight_map.update({name: fname for name in tensors})
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    out["sharded"] = sharded

    torch.save({"fc.weight": torch.randn(16, 8, generator=g), "fc.bias": torch.randn(16, generator=g).half(),
                "steps": torch.arange(12, dtype=torch.int64).reshape(3, 4)}, d / "model.pt")
    out["pytorch"] = d / "model.pt"

    # 8 tensors of 4 MiB: big enough that reading one, or only the header, is visibly not the file.
    big = {f"t{i}": torch.arange(MiB, dtype=torch.float32) * (i + 1) + 0.25 for i in range(8)}
    wl.save_file(big, d / "big.safetensors")
    wl.save_file({k: -v for k, v in big.items()}, d / "big-changed.safetensors")  # same size and header
    assert (d / "big.safetensors").stat().st_size == (d / "big-changed.safetensors").stat().st_size
    out["big"], out["big_changed"] = d / "big.safetensors", d / "big-changed.safetensors"

    wl.save_file({"scalar": torch.tensor(3.5), "empty": torch.zeros(0, 4), "one": torch.ones(1, dtype=torch.int8)},
                 d / "edge.safetensors")
    out["edge"] = d / "edge.safetensors"
    return out


@pytest.fixture(scope="session")
def gguf_file(tmp_path_factory, stories):
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI) to write the GGUF file")
    if not stories.is_file():
        pytest.skip(f"no {stories}")
    out = tmp_path_factory.mktemp("remote-gguf") / "stories260K.gguf"
    subprocess.run([str(CLI), "convert", str(stories), str(out), "--to", "gguf", "--no-tokenizer"], check=True,
                   capture_output=True, timeout=120)
    return out


FORMATS = ["safetensors", "sharded", "pytorch", "gguf"]


def local_source(fmt, ckpt, request):
    if fmt == "gguf":
        return request.getfixturevalue("gguf_file")
    return ckpt[fmt]


# --------------------------------------------------------------------------------------------------
# Where remote checkpoints go: nginx or S3, under a prefix of the test's own

_serial = itertools.count()


class Remote:
    def __init__(self, kind, server, prefix):
        self.kind, self.server, self.prefix = kind, server, prefix

    def url(self, rel=""):
        return self.server.url(f"{self.prefix}/{rel}")

    def dir_url(self, rel):
        return self.url(rel.rstrip("/") + "/")

    def put(self, rel, data):
        return self.server.put(f"{self.prefix}/{rel}", data)

    def publish(self, src, rel=None):
        """A file, or a directory's files, put under the prefix; the URL (a directory's ends in /)."""
        src = pathlib.Path(src)
        rel = rel or src.name
        if src.is_dir():
            for f in sorted(src.iterdir()):
                self.put(f"{rel}/{f.name}", f)
            return self.dir_url(rel)
        return self.put(rel, src)

    def replace(self, rel, data):
        """The object at rel replaced by `data`, with a new ETag (nginx's ETag is mtime-size)."""
        if self.kind == "nginx":  # a new file (the old one may be a hard link to the session's copy)
            self.put(rel, pathlib.Path(data).read_bytes())
            path = self.server.root / self.prefix / rel
            st = path.stat()
            os.utime(path, (st.st_atime + 100, st.st_mtime + 100))
        else:
            self.put(rel, data)


def _prefix(request):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_") + f"-{next(_serial)}"


@pytest.fixture(params=["nginx", "s3"])
def remote(request):
    server = request.getfixturevalue(request.param)
    return Remote(request.param, server, _prefix(request))


@pytest.fixture
def http_remote(request, nginx):
    return Remote("nginx", nginx, _prefix(request))


def open_weights(fmt, where):
    """The loader that reads `fmt` at a path or URL: the hf loader for a directory."""
    if fmt == "sharded":
        return wl.HfWeightLoader().get_weights(where)
    return wl.LocalWeightLoader().get_weights(where)


def bits(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def assert_identical(expected, got):
    """Every tensor: the same names, dtype, shape, values (torch.equal) and bytes."""
    exp_names, got_names = sorted(expected), sorted(got)
    assert exp_names == got_names
    for name in exp_names:
        a, b = expected[name], got[name]
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), name
        assert torch.equal(a, b), name
        assert torch.equal(bits(a), bits(b)), name


def as_dict(weights):
    return {name: weights[name] for name in weights}


def module_like(tensors):
    """A torch module whose buffers have the names, dtypes and shapes of `tensors` (zeros)."""
    root = torch.nn.Module()
    for name, t in tensors.items():
        *parents, leaf = name.split(".")
        m = root
        for p in parents:
            if not hasattr(m, p):
                m.add_module(p, torch.nn.Module())
            m = getattr(m, p)
        m.register_buffer(leaf, torch.zeros_like(t))
    return root


def load_weights(url, expected, loader=None):
    """The engine's load (BaseWeightLoader.load_weights) of `url` into a module like `expected`;
    its state_dict. (load_into would first detect the loader: the GIL test covers that path.)"""
    loader = loader or wl.LocalWeightLoader()
    model = module_like(expected)
    loader.load_weights(model, loader.get_weights(url), progress=False)
    return model.state_dict()


def cli(*args, timeout=120):
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI)")
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def cli_json(*args):
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_error_names(exc, url):
    assert url in str(exc) or url in getattr(exc, "file", ""), f"{url!r} not in {str(exc)!r}"


# ==================================================================================================
# The harness itself (no library needed): pytest -k harness

def _get(port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def _check_range_semantics(port, path, data, stale_date_ok=True):
    """Range, HEAD, ETag, If-Range and If-Match as nginx does them, on `path` holding `data`."""
    n = len(data)
    status, h, body = _get(port, path, method="HEAD")
    assert status == 200 and int(h["content-length"]) == n and body == b""
    assert h.get("accept-ranges") == "bytes" and h.get("etag")
    etag, last_modified = h["etag"], h.get("last-modified")

    status, h, body = _get(port, path, {"Range": "bytes=10-19"})
    assert status == 206 and body == data[10:20] and h["content-range"] == f"bytes 10-19/{n}"
    assert h["etag"] == etag and int(h["content-length"]) == 10
    status, h, body = _get(port, path, {"Range": f"bytes={n - 5}-"})
    assert status == 206 and body == data[-5:]
    status, h, body = _get(port, path, {"Range": "bytes=-7"})
    assert status == 206 and body == data[-7:]
    status, h, body = _get(port, path, {"Range": f"bytes={n - 3}-{n + 100}"})  # clipped to the end
    assert status == 206 and body == data[-3:] and h["content-range"] == f"bytes {n - 3}-{n - 1}/{n}"
    status, h, _ = _get(port, path, {"Range": f"bytes={n}-{n + 10}"})
    assert status == 416 and h["content-range"] == f"bytes */{n}"
    status, _, body = _get(port, path)
    assert status == 200 and body == data

    # If-Range: the current ETag -> the range; a stale one -> 200 with the whole body
    status, _, body = _get(port, path, {"Range": "bytes=0-3", "If-Range": etag})
    assert status == 206 and body == data[:4]
    status, _, body = _get(port, path, {"Range": "bytes=0-3", "If-Range": '"stale"'})
    assert status == 200 and body == data
    if last_modified:
        status, _, body = _get(port, path, {"Range": "bytes=0-3", "If-Range": last_modified})
        assert status == 206 and body == data[:4]
    # If-Match: the current ETag -> served; another -> 412
    status, _, body = _get(port, path, {"Range": "bytes=0-3", "If-Match": etag})
    assert status == 206 and body == data[:4]
    status, _, _ = _get(port, path, {"Range": "bytes=0-3", "If-Match": '"stale"'})
    assert status == 412
    return etag


def test_harness_nginx_serves_ranges_etags_and_preconditions(nginx):
    data = bytes(range(256)) * 64
    nginx.put("harness/blob.bin", data)
    etag = _check_range_semantics(nginx.port, "/harness/blob.bin", data)
    assert re.fullmatch(r'"[0-9a-f]+-[0-9a-f]+"', etag)  # nginx: "mtime-size" in hex
    assert _get(nginx.port, "/harness/missing.bin")[0] == 404
    assert _get(nginx.port, "/harness/")[0] in (403, 404)  # no listing of a directory
    # a new mtime is a new ETag: how the tests make nginx's object change
    path = nginx.root / "harness/blob.bin"
    st = path.stat()
    os.utime(path, (st.st_atime + 100, st.st_mtime + 100))
    assert _get(nginx.port, "/harness/blob.bin", method="HEAD")[1]["etag"] != etag
    # several ranges: multipart/byteranges (the library should ask for one range at a time)
    status, h, _ = _get(nginx.port, "/harness/blob.bin", {"Range": "bytes=0-1,5-6"})
    assert status == 206 and h["content-type"].startswith("multipart/byteranges")
    # keep-alive: two requests on one connection
    conn = http.client.HTTPConnection(HOST, nginx.port, timeout=10)
    for _ in range(2):
        conn.request("GET", "/harness/blob.bin", headers={"Range": "bytes=0-0"})
        assert conn.getresponse().read() == data[:1]
    conn.close()
    log = [e for e in nginx.log() if e.path == "harness/blob.bin"]
    assert log and any(e.status == 206 and e.sent == 10 and e.range == "bytes=10-19" for e in log)


def test_harness_fault_server_ranges_and_faults(fault_http):
    data = os.urandom(10000)
    fault_http.put("m/blob.bin", data)
    p = fault_http.port
    _check_range_semantics(p, "/m/blob.bin", data)
    assert _get(p, "/m/none.bin")[0] == 404 and _get(p, "/m/")[0] == 403

    # counters: requests and body bytes per path
    fault_http.reset()
    _get(p, "/m/blob.bin", {"Range": "bytes=100-199"})
    _get(p, "/m/blob.bin", method="HEAD")
    assert fault_http.count("m/blob.bin") == 2 and fault_http.count("m/blob.bin", "GET") == 1
    assert fault_http.bytes_sent("m/blob.bin") == 100
    r = fault_http.gets("m/blob.bin")[0]
    assert (r.status, r.start, r.end, r.range) == (206, 100, 199, "bytes=100-199")

    # the first n requests fail; 429 with Retry-After: 0
    fault_http.reset()
    fault_http.fail(2, 500)
    assert [_get(p, "/m/blob.bin")[0] for _ in range(3)] == [500, 500, 200]
    fault_http.fail(1, 429)
    status, h, _ = _get(p, "/m/blob.bin")
    assert status == 429 and h["retry-after"] == "0"
    fault_http.reset()
    fault_http.fail(None, 500, path="m/blob.bin")
    assert [_get(p, "/m/blob.bin")[0] for _ in range(3)] == [500] * 3

    # dropped mid-body: the full Content-Length promised, half the body, then closed
    for rst in (False, True):
        fault_http.reset()
        fault_http.drop_mid_body(after=1, times=1, path="m/blob.bin", rst=rst)
        assert _get(p, "/m/blob.bin", {"Range": "bytes=0-999"})[2] == data[:1000]  # the 1st GET: whole
        conn = http.client.HTTPConnection(HOST, p, timeout=10)
        conn.request("GET", "/m/blob.bin", headers={"Range": "bytes=0-999"})
        resp = conn.getresponse()
        assert resp.status == 206 and resp.getheader("Content-Length") == "1000"
        with pytest.raises((http.client.IncompleteRead, ConnectionError)) as info:
            resp.read()
        if isinstance(info.value, http.client.IncompleteRead):  # a reset may lose some of the 500
            assert len(info.value.partial) <= 500 and info.value.partial == data[:len(info.value.partial)]
        conn.close()
        assert fault_http.gets("m/blob.bin")[-1].sent == 500 and fault_http.gets("m/blob.bin")[-1].fault == "drop"
        assert _get(p, "/m/blob.bin", {"Range": "bytes=500-999"})[2] == data[500:1000]  # times=1: over

    # truncated (clean close, short body), on every GET
    fault_http.reset()
    fault_http.truncate_body(path="m/blob.bin", keep=0.5)
    for _ in range(2):
        conn = http.client.HTTPConnection(HOST, p, timeout=10)
        conn.request("GET", "/m/blob.bin", headers={"Range": "bytes=0-99"})
        with pytest.raises(http.client.IncompleteRead) as info:
            conn.getresponse().read()
        assert info.value.partial == data[:50]
        conn.close()

    # a lying HEAD; GETs unaffected
    fault_http.reset()
    fault_http.lie_head_length("m/blob.bin", 1000)
    assert _get(p, "/m/blob.bin", method="HEAD")[1]["content-length"] == str(len(data) + 1000)
    assert _get(p, "/m/blob.bin")[2] == data

    # the object changes after the first ranged GET: new bytes, new ETag; a stale If-Range gets it all
    fault_http.reset()
    new = bytes(255 - b for b in data)
    fault_http.change_after_first_range("m/blob.bin", new)
    s1, h1, b1 = _get(p, "/m/blob.bin", {"Range": "bytes=0-9"})
    assert s1 == 206 and b1 == data[:10]
    s2, h2, b2 = _get(p, "/m/blob.bin", {"Range": "bytes=0-9"})
    assert s2 == 206 and b2 == new[:10] and h2["etag"] != h1["etag"]
    s3, _, b3 = _get(p, "/m/blob.bin", {"Range": "bytes=0-9", "If-Range": h1["etag"]})
    assert s3 == 200 and b3 == new
    assert _get(p, "/m/blob.bin", {"Range": "bytes=0-9", "If-Match": h1["etag"]})[0] == 412

    # a 404 for a path that exists
    fault_http.reset()
    fault_http.not_found("m/blob.bin")
    assert _get(p, "/m/blob.bin")[0] == 404 and _get(p, "/m/blob.bin", method="HEAD")[0] == 404


def test_harness_moto_s3(moto):
    m = moto
    data = os.urandom(5000)
    assert m.put("harness/a/blob.bin", data) == f"s3://{BUCKET}/harness/a/blob.bin"
    path = f"/{BUCKET}/harness/a/blob.bin"
    # requests signed with the IAM user's key (the harness's own SigV4) ...
    status, h, body = m.request("GET", path, headers={"Range": "bytes=10-19"})
    assert status == 206 and body == data[10:20] and h["content-range"] == f"bytes 10-19/{len(data)}"
    etag = h["etag"]
    status, h, _ = m.request("HEAD", path)
    assert status == 200 and int(h["content-length"]) == len(data) and h["etag"] == etag
    assert m.request("GET", path, headers={"Range": "bytes=0-3", "If-Match": etag})[0] == 206
    assert m.request("GET", path, headers={"Range": "bytes=0-3", "If-Match": '"stale"'})[0] == 412
    # ... and every other request refused, as AWS refuses it
    refused = {("SignatureDoesNotMatch", 403): Credentials(m.creds.key, "wrong-secret"),
               ("InvalidAccessKeyId", 403): Credentials("AKIAUNKNOWNKEYID0000", m.creds.secret),
               ("AccessDenied", 403): m.denied,
               ("InvalidToken", 400): Credentials(m.session.key, m.session.secret, "not-the-token")}
    for (code, want), creds in refused.items():
        status, _, body = m.request("GET", path, creds=creds)
        assert (status, s3_error_code(body)) == (want, code), body[:300]
    assert m.raw("GET", path)[0] == 403  # anonymous
    assert m.request("GET", path, creds=m.session)[2] == data  # temporary credentials with their token
    # ListObjectsV2 (path style), the keys under a prefix
    status, _, body = m.request("GET", f"/{BUCKET}?list-type=2&prefix=harness/a/&delimiter=/")
    assert status == 200 and b"<Key>harness/a/blob.bin</Key>" in body and b"<KeyCount>1</KeyCount>" in body
    assert m.request("GET", f"/{BUCKET}/harness/none")[0] == 404
    status, _, body = m.request("GET", "/wl-no-such-bucket/x")
    assert status == 404 and b"NoSuchBucket" in body
    # a new put is a new ETag
    m.put("harness/a/blob.bin", data[::-1])
    assert m.request("HEAD", path)[1]["etag"] != etag


def test_harness_s3rver(s3rver):
    s = s3rver
    data = os.urandom(5000)
    assert s.put("harness/a/blob.bin", data) == f"s3://{BUCKET}/harness/a/blob.bin"
    path = f"/{BUCKET}/harness/a/blob.bin"
    status, h, body = s.request("GET", path, headers={"Range": "bytes=10-19"})
    assert status == 206 and body == data[10:20] and h["content-range"] == f"bytes 10-19/{len(data)}"
    status, h, _ = s.request("HEAD", path)
    assert status == 200 and int(h["content-length"]) == len(data) and h["etag"]
    # another key id is refused; a V4 request without x-amz-content-sha256 too (libcurl's own signing)
    status, _, body = s.request("GET", path, creds=Credentials("AKIAUNKNOWNKEYID0000", "x"))
    assert (status, s3_error_code(body)) == (403, "InvalidAccessKeyId")
    signed = sigv4_headers("GET", f"{HOST}:{s.port}", path, s.creds)
    del signed["x-amz-content-sha256"]
    status, _, body = s.raw("GET", path, headers=signed)
    assert (status, s3_error_code(body)) == (400, "InvalidRequest") and b"x-amz-content-sha256" in body
    status, _, body = s.request("GET", f"/{BUCKET}?list-type=2&prefix=harness/a/&delimiter=/")
    assert status == 200 and b"<Key>harness/a/blob.bin</Key>" in body
    assert s.request("GET", f"/{BUCKET}/harness/none")[0] == 404
    # virtual-hosted: the bucket in the host name (*.localhost is the loopback address)
    status, _, body = s.raw("GET", "/harness/a/blob.bin", headers=sigv4_headers(
        "GET", f"{BUCKET}.s3.localhost:{s.port}", "/harness/a/blob.bin", s.creds))
    assert status == 200 and body == data


def _port_closed(port):
    try:
        socket.create_connection((HOST, port), timeout=1).close()
        return False
    except OSError:
        return True


def _group_gone(pgid):
    try:
        os.killpg(pgid, 0)
        return False
    except ProcessLookupError:
        return True


def test_harness_servers_start_and_stop_cleanly(tmp_path):
    if Nginx(tmp_path).exe is None:
        pytest.skip("nginx is not installed")
    n = Nginx(tmp_path / "nginx").start()
    pgid = n.proc.pid
    assert _get(n.port, "/missing")[0] == 404
    pid_file = (tmp_path / "nginx" / "nginx.pid").read_text().strip()
    assert pid_file == str(pgid)
    n.stop()
    assert _port_closed(n.port) and _group_gone(pgid)  # no master, no worker left

    with FaultServer(tmp_path / "fault") as f:
        f.put("x", b"abc")
        assert _get(f.port, "/x")[2] == b"abc"
        conn = http.client.HTTPConnection(HOST, f.port, timeout=10)  # a kept-alive connection ...
        conn.request("GET", "/x")
        conn.getresponse().read()
    assert _port_closed(f.port)  # ... does not keep the server up
    conn.close()

    if moto_command() is None:
        pytest.skip("moto_server is not on PATH")
    m = Moto(tmp_path).start()
    pgid = m.proc.pid
    assert m.request("GET", "/")[0] == 200
    m.stop()
    assert _port_closed(m.port) and _group_gone(pgid)


# ==================================================================================================
# The library: correctness against local reads

@pytest.mark.parametrize("fmt", FORMATS)
def test_a_remote_checkpoint_is_bit_identical_to_the_local_file(remote, fmt, ckpt, request):
    src = local_source(fmt, ckpt, request)
    url = remote.publish(src)
    local = open_weights(fmt, src)
    got = open_weights(fmt, url)
    assert got.format == local.format
    assert_identical(as_dict(local), as_dict(got))
    for name in local:
        a, b = local.info(name), got.info(name)
        assert (a["dtype"], a["shape"], a["nbytes"]) == (b["dtype"], b["shape"], b["nbytes"]), name
    assert got.metadata() == local.metadata()


def test_load_into_from_a_url(remote, ckpt):
    url = remote.publish(ckpt["safetensors"])
    expected = as_dict(wl.LocalWeightLoader().get_weights(ckpt["safetensors"]))
    model = module_like(expected)
    result = wl.load_into(model, url, progress=False)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert_identical(expected, model.state_dict())


def test_safe_open_and_load_file_on_a_url(remote, ckpt):
    url = remote.publish(ckpt["safetensors"])
    with wl.safe_open(ckpt["safetensors"]) as f:
        expected = {k: f.get_tensor(k) for k in f.keys()}
        meta, order = f.metadata(), f.offset_keys()
    with wl.safe_open(url) as f:
        assert f.keys() == sorted(expected) and f.offset_keys() == order and f.metadata() == meta
        assert f.format == "safetensors"
        assert_identical(expected, {k: f.get_tensor(k) for k in f.keys()})
        assert torch.equal(f.get_slice("embed.weight")[3:9, 1:4], expected["embed.weight"][3:9, 1:4])
    assert_identical(expected, wl.load_file(url))


def test_the_cli_inspects_and_loads_a_url(remote, ckpt):
    src = ckpt["safetensors"]
    url = remote.publish(src)
    want, got = cli_json("inspect", src, "--json"), cli_json("inspect", url, "--json")
    assert got["format"] == want["format"] == "safetensors"
    key = lambda t: (t["name"], t["dtype"], t["shape"], t["bytes"])  # noqa: E731
    assert sorted(map(key, got["tensors"])) == sorted(map(key, want["tensors"]))
    assert got.get("metadata") == want.get("metadata")
    want, got = cli_json("load", src, "--json", "-q"), cli_json("load", url, "--json", "-q")
    assert sorted(got["loaded"]) == sorted(want["loaded"]) and got["format"] == "safetensors"
    assert not got.get("missing") and not got.get("unexpected")


@pytest.mark.parametrize("name", ["stories260K.bin", "model.safetensors"])
def test_generate_runs_a_model_at_a_url(http_remote, stories, tmp_path, name):
    """`generate --model URL` detects the loader through the opener, as for a local path (a lone
    .safetensors file carries its config.json in __metadata__); run.c's text comes out."""
    src = stories
    if name == "model.safetensors":
        src = tmp_path / name
        assert cli("convert", stories, src).returncode == 0
    url = http_remote.publish(src)
    r = cli("generate", "--model", url, "--tokenizer", stories.parent / "tok512.bin", "-t", "0", "-n", "200")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()


def test_zero_size_and_scalar_tensors(remote, ckpt):
    url = remote.publish(ckpt["edge"])
    assert_identical(as_dict(wl.LocalWeightLoader().get_weights(ckpt["edge"])),
                     as_dict(wl.LocalWeightLoader().get_weights(url)))


def test_an_http_directory_opens_through_its_index(http_remote, ckpt):
    url = http_remote.publish(ckpt["sharded"])
    assert url.endswith("/sharded/")
    assert_identical(as_dict(wl.HfWeightLoader().get_weights(ckpt["sharded"])),
                     as_dict(wl.HfWeightLoader().get_weights(url)))
    # without an index there is nothing to find: HTTP has no listing
    http_remote.put("lonely/model-00001-of-00002.safetensors", ckpt["safetensors"])
    with pytest.raises(wl.Error):
        wl.HfWeightLoader().get_weights(http_remote.dir_url("lonely"))
    # an unsharded model: the one file save_pretrained writes, found by its name
    http_remote.put("single/model.safetensors", ckpt["safetensors"])
    assert_identical(as_dict(wl.LocalWeightLoader().get_weights(ckpt["safetensors"])),
                     as_dict(wl.HfWeightLoader().get_weights(http_remote.dir_url("single"))))


def test_an_s3_prefix_is_a_directory(s3, ckpt, request):
    r = Remote("s3", s3, _prefix(request))
    url = r.publish(ckpt["sharded"])
    assert url == f"s3://{BUCKET}/{r.prefix}/sharded/"
    assert_identical(as_dict(wl.HfWeightLoader().get_weights(ckpt["sharded"])),
                     as_dict(wl.HfWeightLoader().get_weights(url)))
    # and the CLI on it
    got = cli_json("inspect", url, "--json")
    assert sorted(t["name"] for t in got["tensors"]) == sorted(wl.HfWeightLoader().get_weights(ckpt["sharded"]))


# ==================================================================================================
# Ranged reads only

def test_one_tensor_reads_about_its_bytes_not_the_file(fault_http, ckpt):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    size = ckpt["big"].stat().st_size
    weights = wl.LocalWeightLoader().get_weights(url)
    opened = fault_http.bytes_sent("m/big.safetensors")
    assert opened <= SLACK, f"opening read {opened} bytes of {size}"
    nbytes = weights.info("t3")["nbytes"]
    t = weights["t3"]
    read = fault_http.bytes_sent("m/big.safetensors")
    assert nbytes <= read <= nbytes + SLACK, f"one tensor of {nbytes} bytes read {read} bytes of {size}"
    assert torch.equal(t, wl.LocalWeightLoader().get_weights(ckpt["big"])["t3"])
    # (the library may probe siblings such as config.json: 404s there are fine)
    assert all(r.status in (200, 206) for r in fault_http.requests("m/big.safetensors"))
    # no GET without a range for the whole object
    assert all(r.range for r in fault_http.gets()), [r for r in fault_http.gets() if not r.range]


def test_opening_a_remote_checkpoint_costs_one_head_and_one_get(fault_http, ckpt):
    """Detection, the existence check and the open share one HEAD; the format sniff, the header's
    length and the header itself one ranged GET (the object's first 64 KiB, kept for all three)."""
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    for what, run in (("a loader", lambda: wl.LocalWeightLoader().get_weights(url)),
                      ("inspect (auto)", lambda: cli_json("inspect", url, "--json"))):
        fault_http.reset()
        run()
        on_file = fault_http.requests("m/big.safetensors")
        assert [r.method for r in on_file] == ["HEAD", "GET"], (what, [(r.method, r.range) for r in on_file])


def test_inspect_reads_only_the_header(fault_http, ckpt):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    got = cli_json("inspect", url, "--json")
    assert sorted(t["name"] for t in got["tensors"]) == [f"t{i}" for i in range(8)]
    read = fault_http.bytes_sent("m/big.safetensors")
    assert read <= SLACK, f"inspect read {read} bytes of {ckpt['big'].stat().st_size}"


# ==================================================================================================
# Bytes fetched, as the reports state them

# What opening a checkpoint may fetch beyond its header: the format sniff (4 KiB), a zip's tail
# search (64 KiB + 22 bytes) and the per-entry local headers read on the way.
HEADER_BOUND = 128 << 10


@pytest.fixture(scope="session")
def llama_formats(tmp_path_factory):
    """A synthetic Llama checkpoint of 147 tensors (3 MiB) as safetensors, GGUF and PyTorch zip."""
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI) to write the checkpoints")
    d = tmp_path_factory.mktemp("remote-llama-formats")
    run = functools.partial(subprocess.run, check=True, capture_output=True, timeout=120)
    run([str(CLI), "synth", str(d / "st"), "--preset", "tiny", "--layers", "16"])
    run([str(CLI), "convert", str(d / "st" / "model.safetensors"), str(d / "llama.gguf"), "--to", "gguf", "--no-tokenizer"])
    torch.save(wl.load_file(d / "st" / "model.safetensors"), d / "llama.pt")
    return {"safetensors": d / "st" / "model.safetensors", "gguf": d / "llama.gguf", "pytorch": d / "llama.pt"}


@pytest.mark.parametrize("fmt", ["safetensors", "gguf", "pytorch"])
def test_inspect_states_the_bytes_it_fetched_only_headers(http_remote, llama_formats, fmt):
    src = llama_formats[fmt]
    got = cli_json("inspect", http_remote.publish(src), "--json")
    header = src.stat().st_size - got["total_bytes"]  # every byte that is not tensor data
    if fmt == "safetensors":
        assert header == 8 + int.from_bytes(src.read_bytes()[:8], "little")
    assert header <= got["bytes_fetched"] <= header + HEADER_BOUND, (got["bytes_fetched"], header)
    assert cli_json("inspect", src, "--json")["bytes_fetched"] == 0  # a local file: nothing over the network


def test_a_load_states_the_bytes_it_fetched(remote, ckpt):
    src = ckpt["big"]
    size = src.stat().st_size
    got = cli_json("load", remote.publish(src), "--json", "-q")
    assert got["bytes_read"] <= got["bytes_fetched"] <= size + HEADER_BOUND, got
    assert cli_json("load", src, "--json", "-q")["bytes_fetched"] == 0


def test_a_tensor_parallel_load_fetches_its_slice_not_the_file(http_remote, ckpt):
    src = ckpt["big"]
    url = http_remote.publish(src)

    class Half(torch.nn.Module):  # rank 0 of 2: the first half of each 1-D tensor (dim 0)
        def __init__(self):
            super().__init__()
            for i in range(8):
                self.register_parameter(f"t{i}", torch.nn.Parameter(torch.empty(MiB // 2), requires_grad=False))

    module = Half()
    report = wl.load_into(module, url, tp_rank=0, tp_size=2).report
    want = wl.load_file(src)
    assert all(torch.equal(getattr(module, f"t{i}"), want[f"t{i}"][:MiB // 2]) for i in range(8))
    slice_bytes = 8 * (MiB // 2) * 4
    assert report.bytes_read == slice_bytes
    assert slice_bytes <= report.bytes_fetched <= slice_bytes + HEADER_BOUND, report.bytes_fetched
    # The slice, not the file: the 2 MiB gaps between the halves cost more to read than a request
    # (WL_HTTP_LATENCY_MS x WL_HTTP_BANDWIDTH_MBPS, 20 ms x 100 MB/s = 2 MB by default).
    assert report.bytes_fetched < src.stat().st_size * 0.6


# ==================================================================================================
# Faults

@functools.lru_cache(maxsize=None)
def _expected_cached(path):
    return as_dict(wl.LocalWeightLoader().get_weights(path))


def _expected(path):
    """The tensors of a local file (read once per session; do not modify them)."""
    return _expected_cached(str(path))


@pytest.mark.parametrize("status", [500, 429, 503])
def test_a_few_failures_are_retried(fault_http, ckpt, status):
    url = fault_http.put("m/model.safetensors", ckpt["safetensors"])
    fault_http.fail(2, status)
    assert_identical(_expected(ckpt["safetensors"]), as_dict(wl.LocalWeightLoader().get_weights(url)))
    assert sum(r.fault == "status" for r in fault_http.requests()) == 2


def test_failures_retried_in_the_cli_too(fault_http, ckpt):
    url = fault_http.put("m/model.safetensors", ckpt["safetensors"])
    fault_http.fail(2, 500)
    report = cli_json("load", url, "--json", "-q")
    assert sorted(report["loaded"]) == sorted(_expected(ckpt["safetensors"]))


def test_a_server_failing_forever_is_an_io_error_naming_the_url(fault_http, ckpt):
    url = fault_http.put("m/model.safetensors", ckpt["safetensors"])
    fault_http.fail(None, 500)
    t0 = time.monotonic()
    with pytest.raises(wl.Error) as info:
        as_dict(wl.LocalWeightLoader().get_weights(url))
    elapsed = time.monotonic() - t0
    assert isinstance(info.value, OSError) and isinstance(info.value, wl.IoError), type(info.value)
    assert not isinstance(info.value, FileNotFoundError)
    assert_error_names(info.value, url)
    assert elapsed < BOUND_S, f"gave up after {elapsed:.1f} s"
    assert fault_http.count() >= 2, "no retry"
    # ... and with the CLI: a non-zero exit naming the URL
    r = cli("load", url, "--json", "-q")
    assert r.returncode != 0 and url in r.stderr


def test_a_server_failing_after_the_header_is_an_error_not_data(fault_http, ckpt):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    weights = wl.LocalWeightLoader().get_weights(url)
    fault_http.fail(None, 500)
    with pytest.raises(wl.Error) as info:
        weights["t5"]
    assert isinstance(info.value, OSError)
    assert_error_names(info.value, url)


@pytest.mark.parametrize("rst", [False, True], ids=["close", "reset"])
def test_a_dropped_connection_is_retried_and_resumed(fault_http, ckpt, rst):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    fault_http.drop_mid_body(after=1, times=2, rst=rst)  # the first GET whole, the next two cut
    assert_identical(_expected(ckpt["big"]), load_weights(url, _expected(ckpt["big"])))
    assert sum(r.fault == "drop" for r in fault_http.requests()) == 2


def test_a_dropped_range_resumes_where_it_stopped(fault_http, ckpt):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    weights = wl.LocalWeightLoader().get_weights(url)
    fault_http.reset()
    fault_http.drop_mid_body(after=0, times=1)  # the next GET is cut (clean close)
    t = weights["t6"]
    assert torch.equal(t, _expected(ckpt["big"])["t6"])
    gets = fault_http.gets()
    dropped = [r for r in gets if r.fault == "drop"]
    assert len(dropped) == 1 and dropped[0].sent > 0
    d = dropped[0]
    resumed_at = d.start + d.sent
    assert any(r.start == resumed_at for r in gets if r is not d), \
        f"no GET resumed at {resumed_at} after {d}; GETs: {[(r.range, r.status, r.sent) for r in gets]}"
    # the bytes received before the drop were not fetched again
    nbytes = weights.info("t6")["nbytes"]
    assert fault_http.bytes_sent() <= nbytes + nbytes // 4, "the range was fetched again from its start"


@pytest.mark.parametrize("times", [1, None], ids=["once", "always"])
def test_a_truncated_body_is_retried_or_an_error_never_wrong_data(fault_http, ckpt, times):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    fault_http.truncate_body(after=1, times=times, keep=0.9)
    t0 = time.monotonic()
    try:
        got = as_dict(wl.LocalWeightLoader().get_weights(url))
    except wl.Error as e:
        assert isinstance(e, OSError) or "trunc" in str(e).lower() or "short" in str(e).lower(), repr(e)
        assert_error_names(e, url)
    else:
        assert_identical(_expected(ckpt["big"]), got)
    assert time.monotonic() - t0 < BOUND_S
    assert any(r.fault == "truncate" for r in fault_http.requests()), "the fault never fired"


@pytest.mark.parametrize("delta", [4096, -4096])
def test_a_lying_head_is_never_wrong_data(fault_http, ckpt, delta):
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    fault_http.lie_head_length("m/big.safetensors", delta)
    try:
        got = as_dict(wl.LocalWeightLoader().get_weights(url))
    except wl.Error as e:
        assert_error_names(e, url)
    else:
        assert_identical(_expected(ckpt["big"]), got)


@pytest.mark.parametrize("when", ["first-range", "first-tensor"])
def test_an_object_changing_mid_load_is_an_error(fault_http, ckpt, when):
    """The object changes after the first ranged GET of the load (whatever it reads: a format
    probe, the header), or after the first GET of tensor data: one load sees one version of the
    object (the ETag of its first answer), else it fails; never a mix, never the new bytes read
    under the old header."""
    url = fault_http.put("m/big.safetensors", ckpt["big"])
    data_start = wl.LocalWeightLoader().get_weights(ckpt["big"]).info("t0")["offset"]
    fault_http.change_after_first_range("m/big.safetensors", ckpt["big_changed"],
                                        min_offset=data_start if when == "first-tensor" else 0)
    # Into BF16 on one reader: the data comes in staged pieces, one after another, so that reads
    # follow the first one's answer (back-to-back F32 tensors may all come in requests already sent).
    bf16 = {name: t.bfloat16() for name, t in _expected(ckpt["big"]).items()}
    with pytest.raises(wl.Error, match=r"(?i)chang|modified") as info:
        load_weights(url, bf16, wl.LocalWeightLoader(concurrency=1))
    assert_error_names(info.value, url)
    assert any(r.fault == "changed" for r in fault_http.requests())


def test_an_object_replaced_between_open_and_read_is_an_error(remote, ckpt):
    """A Weights source keeps the version it opened: reading a tensor after the object was
    replaced (same size, same header, other data) fails, it does not return the new bytes."""
    url = remote.put("big.safetensors", ckpt["big"])
    weights = wl.LocalWeightLoader().get_weights(url)
    remote.replace("big.safetensors", ckpt["big_changed"])
    try:
        t = weights["t2"]
    except wl.Error as e:
        assert re.search(r"(?i)chang|modified", str(e)), str(e)
    else:
        wrong = "the new object's bytes" if torch.equal(t, _expected(ckpt["big_changed"])["t2"]) else "bytes"
        pytest.fail(f"read {wrong} under the header of the object it opened, without an error")


def test_404_is_file_not_found_naming_the_url(fault_http, http_remote, ckpt):
    fault_http.put("m/model.safetensors", ckpt["safetensors"])
    fault_http.not_found("m/model.safetensors")
    for url in (fault_http.url("m/model.safetensors"), fault_http.url("m/absent.safetensors"),
                http_remote.url("absent.safetensors")):
        t0 = time.monotonic()
        with pytest.raises(FileNotFoundError) as info:
            wl.LocalWeightLoader().get_weights(url)
        assert isinstance(info.value, wl.NotFoundError)
        assert_error_names(info.value, url)
        assert time.monotonic() - t0 < 5, "a 404 is not retried"
    assert sum(r.fault == "404" for r in fault_http.requests()) <= 2  # once per open, no retries
    r = cli("inspect", http_remote.url("absent.safetensors"), "--json")
    assert r.returncode != 0 and "absent.safetensors" in r.stderr


# ==================================================================================================
# S3 against two servers that check what AWS checks: moto with IAM authentication on (signatures
# recomputed from the IAM user's secret, policies applied) and s3rver (its own key id only,
# x-amz-content-sha256 required, the clock). See remote_servers.py for what each one checks.

def _remote_s3(server, request):
    return Remote("s3", server, _prefix(request))


def _refused(url, *parts):
    """The library and the CLI both refuse `url` with an error naming it and every one of `parts`."""
    with pytest.raises(wl.Error) as info:
        wl.LocalWeightLoader().get_weights(url)
    assert_error_names(info.value, url)
    for part in parts:
        assert part in str(info.value), str(info.value)
    r = cli("inspect", url)
    assert r.returncode != 0 and url in r.stderr and all(p in r.stderr for p in parts), r.stderr
    return str(info.value)


def test_s3_load_inspect_and_convert(any_s3, ckpt, tmp_path, request):
    url = _remote_s3(any_s3, request).publish(ckpt["safetensors"])
    expected = _expected(ckpt["safetensors"])
    assert_identical(expected, as_dict(wl.LocalWeightLoader().get_weights(url)))
    assert sorted(t["name"] for t in cli_json("inspect", url, "--json")["tensors"]) == sorted(expected)
    # convert from S3 into a local file: the same file as converting the local copy
    for src, out in ((url, tmp_path / "from-s3.safetensors"), (ckpt["safetensors"], tmp_path / "from-disk.safetensors")):
        r = cli("convert", src, out)
        assert r.returncode == 0, r.stderr
    assert_identical(wl.load_file(tmp_path / "from-disk.safetensors"), wl.load_file(tmp_path / "from-s3.safetensors"))


def test_s3_a_sharded_checkpoint_under_a_prefix(any_s3, ckpt, request):
    url = _remote_s3(any_s3, request).publish(ckpt["sharded"])
    assert url.endswith("/sharded/")
    assert_identical(as_dict(wl.HfWeightLoader().get_weights(ckpt["sharded"])),
                     as_dict(wl.HfWeightLoader().get_weights(url)))


def test_s3_a_missing_bucket_or_key_is_file_not_found(any_s3, ckpt, request):
    present = _remote_s3(any_s3, request).put("model.safetensors", ckpt["safetensors"])
    for url in ("s3://wl-no-such-bucket/present/model.safetensors", present.replace("model.", "absent.")):
        with pytest.raises(FileNotFoundError) as info:
            wl.LocalWeightLoader().get_weights(url)
        assert isinstance(info.value, wl.NotFoundError)
        assert_error_names(info.value, url)
    r = cli("inspect", present.replace("model.", "absent."))
    assert r.returncode != 0 and "absent.safetensors" in r.stderr


def test_s3_an_unknown_key_id_is_named(any_s3, ckpt, request, monkeypatch):
    url = _remote_s3(any_s3, request).put("model.safetensors", ckpt["safetensors"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNKEYID0000")
    _refused(url, "the access key id is unknown", "InvalidAccessKeyId", "AKIAUNKNOWNKEYID0000 from the environment")


def test_s3_a_wrong_secret_is_named(any_s3, ckpt, request, monkeypatch):
    if any_s3.kind == "s3rver":
        pytest.skip("s3rver 3.7.1 does not recompute V4 signatures (any secret passes it); moto checks the secret")
    url = _remote_s3(any_s3, request).put("model.safetensors", ckpt["safetensors"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    _refused(url, "the secret access key is likely wrong", "SignatureDoesNotMatch", any_s3.creds.key)
    # a listing too (ListObjectsV2, its query signed as AWS signs it)
    with pytest.raises(wl.Error, match="the secret access key is likely wrong"):
        wl.HfWeightLoader().get_weights(url.rsplit("/", 1)[0] + "/")


def test_s3_a_policy_that_does_not_allow_it_is_named(s3, ckpt, request, monkeypatch):
    url = _remote_s3(s3, request).put("model.safetensors", ckpt["safetensors"])
    for name, value in s3.denied.env().items():
        monkeypatch.setenv(name, value)
    _refused(url, "access denied by policy", "AccessDenied", s3.denied.key)


def test_s3_temporary_credentials_need_their_session_token(s3, ckpt, request, monkeypatch):
    """moto's AssumeRole credentials load with their token (x-amz-security-token, signed) and are
    refused with another one. An expired token cannot be had from either server: moto compares the
    token but never its expiry, and s3rver has no STS; the ExpiredToken explanation is unit-tested
    (tests/remote/aws_s3_error_test.cpp)."""
    url = _remote_s3(s3, request).put("model.safetensors", ckpt["safetensors"])
    for name, value in s3.session.env().items():
        monkeypatch.setenv(name, value)
    assert_identical(_expected(ckpt["safetensors"]), as_dict(wl.LocalWeightLoader().get_weights(url)))
    monkeypatch.setenv("AWS_SESSION_TOKEN", "not-the-session-token")
    _refused(url, "the session token is not valid for this key", "InvalidToken")


def test_s3_without_credentials_requests_are_anonymous(s3, ckpt, request, monkeypatch):
    url = _remote_s3(s3, request).put("model.safetensors", ckpt["safetensors"])
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    _refused(url, "HTTP 403")  # moto answers an unsigned request with no error document


def test_s3_credentials_region_and_endpoint_from_a_profile(s3, ckpt, request, monkeypatch, tmp_path):
    url = _remote_s3(s3, request).put("model.safetensors", ckpt["safetensors"])
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(name)
    creds, config = tmp_path / "credentials", tmp_path / "config"
    creds.write_text(f"[default]\naws_access_key_id = AKIANOTTHISONE000000\naws_secret_access_key = x\n\n"
                     f"[wl-test]\naws_access_key_id = {s3.creds.key}\naws_secret_access_key = {s3.creds.secret}\n")
    config.write_text(f"[profile wl-test]\nregion = {s3.region}\ns3 =\n  endpoint_url = {s3.endpoint}\n"
                      f"  addressing_style = path\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "wl-test")
    assert_identical(_expected(ckpt["safetensors"]), as_dict(wl.LocalWeightLoader().get_weights(url)))
    assert cli_json("load", url, "--json", "-q")["format"] == "safetensors"
    # the default profile's key is another one, and says where it came from
    monkeypatch.delenv("AWS_PROFILE")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    _refused(url, "the access key id is unknown", f"profile 'default' of {creds}")
    # a malformed file: its name and line
    creds.write_text("[default]\naws_access_key_id AKIA\n")
    with pytest.raises(wl.Error, match=r"line 2: expected 'name = value'") as info:
        wl.LocalWeightLoader().get_weights(url)
    assert str(creds) in str(info.value)


def test_s3_virtual_hosted_addressing(s3rver, ckpt, request, monkeypatch):
    """The bucket in the host name: http://wl-test.s3.localhost:PORT/key (libcurl resolves
    *.localhost to the loopback address; s3rver finds the bucket under --service-endpoint localhost)."""
    use_s3(s3rver, monkeypatch)
    url = _remote_s3(s3rver, request).publish(ckpt["sharded"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://s3.localhost:{s3rver.port}")
    monkeypatch.setenv("AWS_S3_ADDRESSING_STYLE", "virtual")
    assert_identical(as_dict(wl.HfWeightLoader().get_weights(ckpt["sharded"])),
                     as_dict(wl.HfWeightLoader().get_weights(url)))


# ==================================================================================================
# Cancellation

def test_a_progress_callable_returning_false_cancels_a_remote_load(remote, ckpt):
    url = remote.put("big.safetensors", ckpt["big"])
    seen = []

    def cancel(done, total):
        seen.append((done, total))
        return False
    with pytest.raises(wl.CancelledError):
        wl.load_into(module_like(_expected(ckpt["big"])), url, progress=cancel)
    assert seen
    loader = wl.LocalWeightLoader()
    with pytest.raises(wl.CancelledError):
        loader.load_weights(module_like(_expected(ckpt["big"])), loader.get_weights(url), progress=cancel)
    # and the source is still usable afterwards
    model = module_like(_expected(ckpt["big"]))
    wl.load_into(model, url, progress=False)
    assert torch.equal(model.t7, _expected(ckpt["big"])["t7"])


# ==================================================================================================
# The GIL: network I/O must not hold it (Python threads, e.g. an in-process server, keep running)

GIL_SCRIPT = r"""
import os, sys, json
sys.path.insert(0, sys.argv[1])
import torch
import weightloader as wl
from remote_servers import FaultServer
root = sys.argv[2]
with FaultServer(root) as f:
    url = f.url("m/model.safetensors")
    def module():
        m = torch.nn.Module()
        for k, v in wl.load_file(os.path.join(root, "m", "model.safetensors")).items():
            m.register_buffer(k.replace(".", "_"), torch.zeros_like(v))
        return m
    calls = [
        ("LocalWeightLoader().get_weights", lambda: wl.LocalWeightLoader().get_weights(url)),
        ("Weights[name]", lambda: wl.LocalWeightLoader().get_weights(url)["embed.weight"]),
        ("load_weights", lambda: (lambda l: l.load_weights(module(), l.get_weights(url), strict=False,
                                                           progress=False))(wl.LocalWeightLoader())),
        ("safe_open", lambda: wl.safe_open(url).keys()),
        ("load_file", lambda: wl.load_file(url)),
        ("load_into (loader auto: detection)", lambda: wl.load_into(module(), url, strict=False, progress=False)),
        ("HfWeightLoader().get_weights(dir/)", lambda: wl.HfWeightLoader().get_weights(f.url("m/"))),
    ]
    for name, call in calls:
        print(name, flush=True)
        try:
            call()
        except wl.Error as e:
            print("  error:", e, flush=True)
    print("done", flush=True)
"""


def test_remote_calls_release_the_gil(tmp_path, ckpt):
    """Each entry point on a URL served by a server thread of the same process: a call that keeps
    the GIL during network I/O deadlocks with it until the library's own timeout."""
    m = tmp_path / "root" / "m"
    m.mkdir(parents=True)
    os.link(ckpt["safetensors"], m / "model.safetensors")
    (m / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: "model.safetensors" for k in _expected(ckpt["safetensors"])}}))
    env = {**os.environ, **QUICK_RETRIES}
    proc = subprocess.Popen([sys.executable, "-c", GIL_SCRIPT, str(pathlib.Path(__file__).parent),
                             str(tmp_path / "root")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=20)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    if timed_out:
        last = out.strip().splitlines()[-1] if out.strip() else "(start)"
        pytest.fail(f"{last!r} blocked a Python server thread for 20 s (the GIL held during network I/O?); "
                    f"output:\n{out}", pytrace=False)
    r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("done") and "error:" not in r.stdout, r.stdout


def test_https_streams_with_the_ca_bundle_from_the_environment(nginx_tls, testdata, tmp_path):
    """HTTPS against nginx with a self-signed certificate: trusted through WL_CA_BUNDLE, refused
    (naming the URL) with the system's bundle."""
    url = nginx_tls.put("tls/model.safetensors", testdata / "hf-tiny-random-llama-2" / "model.safetensors")
    env = dict(os.environ, WL_CA_BUNDLE=str(nginx_tls.tls[0]), **QUICK_RETRIES)
    env.pop("https_proxy", None), env.pop("HTTPS_PROXY", None)
    r = subprocess.run([str(CLI), "load", url, "--json", "-q"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    local = subprocess.run([str(CLI), "load", str(testdata / "hf-tiny-random-llama-2" / "model.safetensors"), "--json", "-q"],
                           capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout)["loaded"] == json.loads(local.stdout)["loaded"]
    env["WL_CA_BUNDLE"] = "/etc/ssl/certs/ca-certificates.crt"
    r = subprocess.run([str(CLI), "inspect", url], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and url in r.stderr and "SSL" in r.stderr.upper()


def test_back_to_back_tensors_come_in_one_ranged_get(nginx, tmp_path):
    """64 tensors of 64 KiB side by side: one reader thread fetches them with one ranged GET whose
    body is spread over their parameters (the byte source's scattered read), not one GET each."""
    tensors = {f"t{i:02d}": torch.full((16384,), float(i)) for i in range(64)}
    wl.save_file(tensors, tmp_path / "many.safetensors")
    url = nginx.put("many/many.safetensors", tmp_path / "many.safetensors")
    loader = wl.LocalWeightLoader(concurrency=1)
    weights = loader.get_weights(url)
    before = len(nginx.log())
    model = module_like(tensors)
    loader.load_weights(model, weights, progress=False)
    gets = [e for e in nginx.log()[before:] if e.path == "many/many.safetensors" and e.method == "GET"]
    assert len(gets) == 1 and gets[0].sent == 64 * 16384 * 4, [(e.range, e.sent) for e in gets]
    assert_identical(tensors, model.state_dict())
