"""Ctrl-C reaches a long call whatever thread does the work: a subprocess starts a load (load_into at
concurrency 2 and 4, LLM construction, safe_open(...).get_tensor over a rate-limited HTTP server),
gets SIGINT 0.1 s in, and must raise KeyboardInterrupt long before the load could have ended, with no
thread left behind. The loads are made slow (a progress callable that sleeps, a throttled server)
so that "long before" holds on any machine; the bounds are generous, the latency is printed."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from remote_servers import Nginx

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("WL_CLI", str(ROOT / "build" / "weightloader"))
BOUND_S = 5.0  # KeyboardInterrupt within this of the signal; every load below takes much longer

CHILD = r"""
import os, sys, time, torch, weightloader as wl
kind, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])

def threads():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])

def slow(done, total):  # keeps the load going for seconds: each report takes 0.2 s
    time.sleep(0.2)
    return True

if kind == "load_into":
    weights = wl.LocalWeightLoader().get_weights(path)
    model = torch.nn.Module()
    for name in weights:
        model.register_buffer(name, torch.empty(weights.info(name)["shape"]))
    run = lambda: wl.load_into(model, path, progress=slow, concurrency=concurrency)
elif kind == "llm":
    run = lambda: wl.LLM(path, weight_loader_kwargs={"concurrency": concurrency}, progress=slow)
elif kind == "get_tensor":
    reader = wl.safe_open(path, framework="pt")
    run = lambda: reader.get_tensor("w")
elif kind == "get_weights":  # a model id missing from the cache: downloaded from HF_ENDPOINT over HTTP
    run = lambda: wl.HfWeightLoader(concurrency=concurrency, stream=False).get_weights(path)
elif kind == "load_streamed":  # the same, loaded while it downloads
    model = torch.nn.Module()
    model.register_buffer("w", torch.empty(24 << 20))
    run = lambda: wl.load_into(model, path, loader=wl.HfWeightLoader(concurrency=concurrency))
before = threads()
print("ready", flush=True)
start = time.monotonic()
try:
    run()
    print(json.dumps({"outcome": "completed", "seconds": time.monotonic() - start}), flush=True)
except KeyboardInterrupt:
    at = time.monotonic()
    time.sleep(0.05)  # a thread still running would show up here
    print(json.dumps({"outcome": "interrupted", "at": at, "threads_before": before, "threads_after": threads()}),
          flush=True)
""".replace("import os,", "import json, os,")


def interrupt(kind, path, concurrency=1, env=None):
    """Runs the child, sends SIGINT 0.1 s after it starts the call; returns (its report, latency in s)."""
    env = {**(env or os.environ), "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(path), str(concurrency)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()
        assert line.strip() == "ready", (line, child.stderr.read() if child.poll() is not None else "")
        time.sleep(0.1)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        exited = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["outcome"] == "interrupted", report
    latency = report["at"] - sent  # CLOCK_MONOTONIC: one clock for both processes
    print(f"{kind} concurrency {concurrency}: KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT, "
          f"exit after {exited:.2f} s")
    assert latency < BOUND_S and exited < BOUND_S + 5, (latency, exited)
    assert report["threads_after"] <= report["threads_before"], report  # nothing left running
    return report, latency


def write_safetensors(path, tensors):
    """tensors: {name: (shape, nbytes)}, F32 zeros (a sparse file: quick to write, read from holes)."""
    header, offset = {}, 0
    for name, (shape, nbytes) in tensors.items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        f.truncate(8 + len(text) + offset)
    return path


@pytest.fixture(scope="module")
def many_tensors(tmp_path_factory):
    # 64 tensors of 4 MiB: at 0.2 s a progress report, about 13 s to load.
    return write_safetensors(tmp_path_factory.mktemp("interrupt") / "model.safetensors",
                             {f"w{i}": ([1024, 1024], 4 << 20) for i in range(64)})


@pytest.mark.parametrize("concurrency", [2, 4])
def test_ctrl_c_stops_load_into(many_tensors, concurrency):
    interrupt("load_into", many_tensors, concurrency)


@pytest.mark.parametrize("concurrency", [2, 4])
def test_ctrl_c_stops_llm_construction(tmp_path_factory, concurrency):
    interrupt("llm", synth_small(tmp_path_factory), concurrency)


def test_ctrl_c_stops_get_tensor_over_a_slow_server(tmp_path):
    server = Nginx(tmp_path / "nginx", limit_rate=16_000_000)  # 96 MB at 16 MB/s: 6 s
    if server.exe is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    server.start()
    try:
        write_safetensors(server.root / "big.safetensors", {"w": ([24, 1 << 20], 96 << 20)})
        interrupt("get_tensor", server.url("big.safetensors"))
    finally:
        server.stop()



def synth_small(tmp_path_factory):
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"no weightloader CLI at {CLI}")
    model = tmp_path_factory.getbasetemp() / "interrupt-llm"
    if not model.exists():
        subprocess.run([CLI, "synth", str(model), "--preset", "small"], check=True, capture_output=True)
    return model


@pytest.mark.parametrize("tp", [1, 2])
def test_ctrl_c_stops_generate_and_the_llm_stays_usable(testdata, tp):
    """A SIGINT during generate (sent from the stream, so that it lands mid-generation on any machine)
    stops it within a few tokens, and the next generate on the same LLM works."""
    import weightloader as wl
    d = testdata / "llama2c-stories260K"
    llm = wl.LLM(str(d / "stories260K.bin"), tokenizer=str(d / "tok512.bin"), tensor_parallel_size=tp)
    greedy = wl.SamplingParams(temperature=0, max_tokens=200)
    seen = []

    def stream(piece):
        seen.append(piece)
        if len(seen) == 10:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # lets the main thread run the handler (the whole generation takes less)
    with pytest.raises(KeyboardInterrupt):
        llm.generate("", greedy, stream=stream)
    assert 10 <= len(seen) < 200  # stopped before its end
    assert llm.generate("", greedy)[0].full_text == (d / "expected_greedy_t0_n200.txt").read_text().rstrip("\n")


@pytest.mark.parametrize("tp", [1, 2])
def test_ctrl_c_stops_a_generate_of_token_ids(tmp_path_factory, tp):
    """Without a tokenizer there is no stream: the engine asks before each token all the same."""
    import threading
    import weightloader as wl
    llm = wl.LLM(str(synth_small(tmp_path_factory)), tensor_parallel_size=tp)
    long = wl.SamplingParams(temperature=0, max_tokens=2000)  # tens of seconds on this model
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        llm.generate([1], long)
    print(f"generate of ids (tp={tp}) interrupted after {time.monotonic() - start:.2f} s (SIGINT at 0.3 s)")
    assert time.monotonic() - start < 0.3 + BOUND_S
    assert len(llm.generate([1], wl.SamplingParams(temperature=0, max_tokens=3))[0].token_ids) == 3


@pytest.mark.parametrize("concurrency", [2, 4])
def test_ctrl_c_stops_a_hub_download_in_get_weights(tmp_path, concurrency):
    """HfWeightLoader().get_weights of a model id the cache lacks downloads it over HTTP (the tests'
    hub, its LFS file from nginx at 16 MB/s per connection: seconds); Ctrl-C stops it and leaves only
    a partial blob, never a file under its final name."""
    from hub_server import FakeHub
    cdn = Nginx(tmp_path / "nginx", limit_rate=16_000_000)
    if cdn.exe is None:
        pytest.skip("nginx is not installed")
    hub = FakeHub(tmp_path / "cdn", cdn=cdn).start()
    try:
        hub.add_repo("org/big", {"config.json": b"{}", "model.safetensors": os.urandom(96 << 20)})
        cache = tmp_path / "cache"
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache), WL_HUB_PIECE_BYTES=str(8 << 20))
        env.pop("HF_HUB_OFFLINE", None)
        interrupt("get_weights", "org/big", concurrency, env)
        assert not list(cache.glob("models--org--big/snapshots/*/model.safetensors"))
        whole = [b for b in cache.glob("models--org--big/blobs/*") if b.stat().st_size == 96 << 20 and "partial" not in b.name]
        assert whole == []  # the big file only ever under its partial name
    finally:
        hub.stop()


def test_ctrl_c_stops_a_load_that_streams_a_hub_download(tmp_path):
    """load_into of a model id the cache lacks reads it as it arrives (96 MiB from nginx at 16 MB/s):
    Ctrl-C stops the load and its download, leaving no file under its final name."""
    from hub_server import FakeHub
    cdn = Nginx(tmp_path / "nginx", limit_rate=16_000_000)
    if cdn.exe is None:
        pytest.skip("nginx is not installed")
    hub = FakeHub(tmp_path / "cdn", cdn=cdn).start()
    try:
        model = write_safetensors(tmp_path / "model.safetensors", {"w": ([24 << 20], 96 << 20)}).read_bytes()
        hub.add_repo("org/big", {"config.json": b"{}", "model.safetensors": model})
        cache = tmp_path / "cache"
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache), WL_HUB_PIECE_BYTES=str(8 << 20))
        env.pop("HF_HUB_OFFLINE", None)
        interrupt("load_streamed", "org/big", 2, env)
        assert not list(cache.glob("models--org--big/snapshots/*/model.safetensors"))
        whole = [b for b in cache.glob("models--org--big/blobs/*") if b.stat().st_size == len(model) and "partial" not in b.name]
        assert whole == []  # what arrived is kept only under its partial name
    finally:
        hub.stop()
