"""Hub download throughput on loopback: `weightloader download` of a synthetic repository (one
safetensors file of --mib MiB, random bytes, plus config.json) from the tests' fake hub and CDN
(tests/python/hub_server.py; the LFS file is served by nginx, or with --python-cdn by the tests'
Python server), for each --concurrency, into a fresh cache each time, beside the limit: curl
writing the same LFS file from the same CDN (one GET, into a fresh file; curl neither checks nor
syncs it), and curl followed by an fsync of its file (the bytes on disk, as our downloads are
before their rename: the limit for a download that survives a crash); and the peer a user would
pick instead: huggingface_hub's snapshot_download (the pinned release, its default settings;
hf_transfer is not used: huggingface_hub 1.0 dropped it) of the same repository into a fresh cache.
Each figure is the median of --runs, all alternating. Prints one line per row. Also run by
bench/run_all.py's peers group (measure()).

  build-deps/venv/bin/python bench/hub_download.py --mib 512 --concurrency 1 4 8
  build-deps/venv/bin/python bench/hub_download.py --mib 256 --piece-mib 16 --rate-mib 32 --concurrency 1 4 8"""
import argparse
import hashlib
import os
import shutil
import statistics
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from hub_server import FakeHub  # noqa: E402
from remote_servers import Nginx  # noqa: E402


def snapshot_download_once(hub, tmp):
    """Seconds of huggingface_hub.snapshot_download of bench/model into a fresh cache, in a fresh
    process (as `weightloader download` runs), its import before the clock."""
    cache = pathlib.Path(tmp) / "hf-cache"
    code = ("import sys, time, huggingface_hub as hh; t0 = time.monotonic(); "
            "hh.snapshot_download('bench/model', cache_dir=sys.argv[1], endpoint=sys.argv[2]); "
            "print(time.monotonic() - t0)")
    out = subprocess.run([sys.executable, "-c", code, str(cache), hub.url], check=True, capture_output=True, text=True,
                         env=dict(os.environ, HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1"))
    shutil.rmtree(cache)
    return float(out.stdout.split()[-1])


def measure(cli, mib, concurrency, runs, piece_mib=64, rate_mib=0, python_cdn=False):
    """Yields (concurrency, {"ours": [s], "curl": [s], "curl_fsync": [s], "snapshot_download": [s]})."""
    with tempfile.TemporaryDirectory() as tmp:
        cdn = None if python_cdn else Nginx(pathlib.Path(tmp) / "nginx", limit_rate=rate_mib * (1 << 20))
        hub = FakeHub(pathlib.Path(tmp) / "cdn", cdn=cdn).start()
        try:
            data = os.urandom(mib << 20)
            hub.add_repo("bench/model", {"config.json": b"{}", "model.safetensors": data})
            lfs_url = hub.cdn.url(hashlib.sha256(data).hexdigest())
            del data
            curl = shutil.which("curl")

            def curl_once(durable):
                out = pathlib.Path(tmp) / "curl.out"
                t0 = time.monotonic()
                subprocess.run([curl, "-sf", "-o", str(out), lfs_url], check=True)
                if durable:  # what a download that survives a crash must add: the bytes on disk
                    fd = os.open(out, os.O_RDONLY)
                    os.fsync(fd)
                    os.close(fd)
                s = time.monotonic() - t0
                out.unlink()
                return s

            for c in concurrency:
                def ours_once():
                    cache = pathlib.Path(tmp) / f"cache-{c}"  # fresh each time: removed after the run
                    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache),
                               WL_HUB_PIECE_BYTES=str(piece_mib << 20))
                    t0 = time.monotonic()
                    subprocess.run([cli, "download", "bench/model", "-q", "--concurrency", str(c)], env=env,
                                   check=True, stdout=subprocess.DEVNULL)
                    s = time.monotonic() - t0
                    shutil.rmtree(cache)
                    return s
                got = {"ours": [], "curl": [], "curl_fsync": [], "snapshot_download": []}
                ways = [("ours", ours_once), ("snapshot_download", lambda: snapshot_download_once(hub, tmp))]
                if curl:
                    ways += [("curl", lambda: curl_once(False)), ("curl_fsync", lambda: curl_once(True))]
                for i in range(runs):
                    for name, once in (ways if i % 2 == 0 else ways[::-1]):
                        got[name].append(once())
                yield c, {k: v for k, v in got.items() if v}
        finally:
            hub.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--piece-mib", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cli", default=str(ROOT / "build" / "weightloader"))
    ap.add_argument("--python-cdn", action="store_true", help="serve the LFS file with Python's http.server, not nginx")
    ap.add_argument("--rate-mib", type=float, default=0,
                    help="nginx limit_rate per connection in MiB/s (a CDN's per-connection throughput); 0: none")
    args = ap.parse_args()
    rate = f", {args.rate_mib:g} MiB/s per connection" if args.rate_mib else ""
    for c, got in measure(args.cli, args.mib, args.concurrency, args.runs, args.piece_mib, args.rate_mib,
                          args.python_cdn):
        s = statistics.median(got["ours"])
        line = (f"concurrency {c}: {args.mib} MiB in {s:.2f} s = {args.mib / s:.0f} MiB/s "
                f"(pieces of {args.piece_mib} MiB, sha256 checked, synced{rate})")
        hf = statistics.median(got["snapshot_download"])
        line += f"; huggingface_hub.snapshot_download {hf:.2f} s, ours/snapshot_download speed {hf / s:.2f}x"
        if "curl" in got:
            p, d = statistics.median(got["curl"]), statistics.median(got["curl_fsync"])
            line += (f"; curl {p:.2f} s, curl + fsync {d:.2f} s; ours/curl speed {p / s:.2f}x, "
                     f"ours/(curl + fsync) {d / s:.2f}x")
        print(line, flush=True)


if __name__ == "__main__":
    main()
