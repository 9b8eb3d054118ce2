"""Hub download throughput on loopback: `weightloader download` of a synthetic repository (one
safetensors file of --mib MiB, random bytes, plus config.json) from the tests' fake hub and CDN
(tests/python/hub_server.py; the LFS file is served by nginx, or with --python-cdn by the tests'
Python server), for each --concurrency, into a fresh cache each time, beside the limit: curl
writing the same LFS file from the same CDN (one GET, into a fresh file; curl neither checks nor
syncs it), and curl followed by an fsync of its file (the bytes on disk, as our downloads are
before their rename: the limit for a download that survives a crash). Each figure is the median of --runs, the two alternating. Prints one line per row.

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
    with tempfile.TemporaryDirectory() as tmp:
        cdn = None if args.python_cdn else Nginx(pathlib.Path(tmp) / "nginx", limit_rate=args.rate_mib * (1 << 20))
        hub = FakeHub(pathlib.Path(tmp) / "cdn", cdn=cdn).start()
        try:
            data = os.urandom(args.mib << 20)
            hub.add_repo("bench/model", {"config.json": b"{}", "model.safetensors": data})
            lfs_url = hub.cdn.url(hashlib.sha256(data).hexdigest())
            del data
            curl = shutil.which("curl")
            rate = f", {args.rate_mib:g} MiB/s per connection" if args.rate_mib else ""

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

            for c in args.concurrency:
                def ours_once():
                    cache = pathlib.Path(tmp) / f"cache-{c}"  # fresh each time: removed after the run
                    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache),
                               WL_HUB_PIECE_BYTES=str(args.piece_mib << 20))
                    t0 = time.monotonic()
                    subprocess.run([args.cli, "download", "bench/model", "-q", "--concurrency", str(c)], env=env,
                                   check=True, stdout=subprocess.DEVNULL)
                    s = time.monotonic() - t0
                    shutil.rmtree(cache)
                    return s
                ours, peer, durable = [], [], []
                for i in range(args.runs):
                    trio = [(ours, ours_once)]
                    if curl:
                        trio += [(peer, lambda: curl_once(False)), (durable, lambda: curl_once(True))]
                    for into, once in (trio if i % 2 == 0 else trio[::-1]):
                        into.append(once())
                s = statistics.median(ours)
                line = (f"concurrency {c}: {args.mib} MiB in {s:.2f} s = {args.mib / s:.0f} MiB/s "
                        f"(pieces of {args.piece_mib} MiB, sha256 checked, synced{rate})")
                if peer:
                    p, d = statistics.median(peer), statistics.median(durable)
                    line += (f"; curl {p:.2f} s, curl + fsync {d:.2f} s; ours/curl speed {p / s:.2f}x, "
                             f"ours/(curl + fsync) {d / s:.2f}x")
                print(line, flush=True)
        finally:
            hub.stop()


if __name__ == "__main__":
    main()
