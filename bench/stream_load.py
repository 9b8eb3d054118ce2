"""The first load of a model id the cache lacks, on loopback: streamed (`weightloader load ORG/NAME`
into a fresh cache: the weights reach the parameters as they arrive, written through into the
cache) against its two parts alone — `weightloader download` into a fresh cache, and a load of the
filled cache (warm: the download left it in the page cache) — and against the two in a row (the
hf loader's stream=false), and against the peers' way: huggingface_hub.snapshot_download followed by
safetensors.torch.load_file, in one fresh process. The hub is the tests' fake one
(tests/python/hub_server.py), the LFS file served by nginx (limit --rate-mib MiB/s per connection;
0: none). A synthetic safetensors file of --mib MiB in tensors of 8 MiB. Medians of --runs, all
ways alternating. The goal: streamed <= 1.1 x max(download, load).

  build-deps/venv/bin/python bench/stream_load.py --mib 512 --runs 5"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from safetensors.numpy import save

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from hub_server import FakeHub  # noqa: E402
from remote_servers import Nginx  # noqa: E402

PEER = ("import sys, time, huggingface_hub as hh, safetensors.torch as st; t0 = time.monotonic(); "
        "d = hh.snapshot_download('bench/model', cache_dir=sys.argv[1], endpoint=sys.argv[2]); "
        "st.load_file(d + '/model.safetensors'); print(time.monotonic() - t0)")


def checkpoint(mib):
    rng = np.random.default_rng(0)
    return save({f"layers.{i}.weight": rng.standard_normal((1024, 2048), dtype=np.float32) for i in range(mib // 8)})


def measure(cli, mib, runs, rate_mib=0):
    """{way: [seconds]} for the ways above."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        hub = FakeHub(tmp / "cdn", cdn=Nginx(tmp / "nginx", limit_rate=int(rate_mib * (1 << 20)))).start()
        try:
            hub.add_repo("bench/model", {"config.json": b"{}", "model.safetensors": checkpoint(mib)})
            cache = tmp / "cache"
            env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache), HF_HUB_DISABLE_PROGRESS_BARS="1",
                       HF_HUB_DISABLE_TELEMETRY="1")

            def timed(*args, fresh=True):
                if fresh:
                    shutil.rmtree(cache, ignore_errors=True)
                t0 = time.monotonic()
                subprocess.run([cli, *args, "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
                return time.monotonic() - t0

            def load_filled():
                snapshot = subprocess.run([cli, "download", "bench/model", "-q"], env=env, check=True,
                                          capture_output=True, text=True).stdout.strip()
                return timed("load", snapshot, fresh=False)

            def peer():
                shutil.rmtree(cache, ignore_errors=True)
                out = subprocess.run([sys.executable, "-c", PEER, str(cache), hub.url], env=env, check=True,
                                     capture_output=True, text=True).stdout
                return float(out.split()[-1])
            ways = {"streamed": lambda: timed("load", "bench/model"),
                    "download": lambda: timed("download", "bench/model"),
                    "load_filled": load_filled,
                    "download_then_load": lambda: timed("load", "bench/model", "--kw", "stream=false"),
                    "snapshot_download_then_load_file": peer}
            got = {k: [] for k in ways}
            for i in range(runs):
                for name, once in (list(ways.items()) if i % 2 == 0 else list(ways.items())[::-1]):
                    got[name].append(once())
            return got
        finally:
            hub.stop()


def summary(got, mib):
    med = {k: statistics.median(v) for k, v in got.items()}
    span = {k: f"{min(v):.2f}..{max(v):.2f}" for k, v in got.items()}
    bound = max(med["download"], med["load_filled"])
    lines = [f"{k}: {med[k]:.2f} s ({span[k]})" for k in got]
    lines.append(f"streamed / max(download, load_filled) = {med['streamed'] / bound:.2f} (goal <= 1.1); "
                 f"download_then_load / streamed = {med['download_then_load'] / med['streamed']:.2f}x; "
                 f"snapshot_download_then_load_file / streamed = "
                 f"{med['snapshot_download_then_load_file'] / med['streamed']:.2f}x ({mib} MiB)")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rate-mib", type=float, default=0)
    ap.add_argument("--cli", default=str(ROOT / "build" / "weightloader"))
    args = ap.parse_args()
    for line in summary(measure(args.cli, args.mib, args.runs, args.rate_mib), args.mib):
        print(line, flush=True)


if __name__ == "__main__":
    main()
