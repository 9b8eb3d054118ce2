"""Hub download throughput on loopback: `weightloader download` of a synthetic repository (one
safetensors file of --mib MiB, random bytes, plus config.json) from the tests' fake hub and CDN
(tests/python/hub_server.py; the LFS file is served by nginx, or with --python-cdn by the tests'
Python server), for each --concurrency, into a fresh cache each time. Prints one line per run.

  /usr/bin/python3 bench/hub_download.py --mib 512 --concurrency 1 4 8
  /usr/bin/python3 bench/hub_download.py --mib 256 --piece-mib 16 --rate-mib 32 --concurrency 1 4 8"""
import argparse
import os
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
    ap.add_argument("--cli", default=str(ROOT / "build" / "weightloader"))
    ap.add_argument("--python-cdn", action="store_true", help="serve the LFS file with Python's http.server, not nginx")
    ap.add_argument("--rate-mib", type=float, default=0,
                    help="nginx limit_rate per connection in MiB/s (a CDN's per-connection throughput); 0: none")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cdn = None if args.python_cdn else Nginx(pathlib.Path(tmp) / "nginx", limit_rate=args.rate_mib * (1 << 20))
        hub = FakeHub(pathlib.Path(tmp) / "cdn", cdn=cdn).start()
        try:
            hub.add_repo("bench/model", {"config.json": b"{}", "model.safetensors": os.urandom(args.mib << 20)})
            for c in args.concurrency:
                cache = pathlib.Path(tmp) / f"cache-{c}"
                env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(cache),
                           WL_HUB_PIECE_BYTES=str(args.piece_mib << 20))
                t0 = time.monotonic()
                subprocess.run([args.cli, "download", "bench/model", "-q", "--concurrency", str(c)], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                s = time.monotonic() - t0
                print(f"concurrency {c}: {args.mib} MiB in {s:.2f} s = {args.mib / s:.0f} MiB/s "
                      f"(pieces of {args.piece_mib} MiB, sha256 checked"
                      f"{f', {args.rate_mib:g} MiB/s per connection' if args.rate_mib else ''})")
        finally:
            hub.stop()


if __name__ == "__main__":
    main()
