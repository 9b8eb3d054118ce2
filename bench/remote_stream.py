"""Remote streaming speed: `weightloader load URL` against curl on the same loopback server.

Serves one safetensors checkpoint from nginx (http://127.0.0.1) and from s3rver (s3://; npm's
S3 server, which serves objects from disk and checks signatures' form; moto is for correctness
tests only: its cost per ranged GET grows with the object), both started the way the tests start
them (tests/python/remote_servers.py), then measures:
  curl        the loopback limit: one `curl -s -o /dev/null` of the whole object, and N curls at
              once, each fetching 1/N of it by range (N = 4, 16); S3 requests signed by curl
              itself (--aws-sigv4)
  ours        `weightloader load URL --json -q --kw concurrency=N` (N = 1, 4, 16), F32 -> F32
  before      with --baseline-build DIR: the same loads with an earlier build's CLI, each run
              alternating between the two builds
Reports GB/s (median of --runs, min..max), ours / curl at the same concurrency (1 is the single
whole-object curl) and ours / the best of curl's three ways (the server's limit). GB/s are object bytes per second: curl's own transfer time (-w time_total;
for N curls, the wall time from launching them to the last one ending) and the load report's
seconds for ours.

Usage: build-deps/venv/bin/python bench/remote_stream.py [--build build] [--baseline-build DIR] [--runs 3]
                                               [--checkpoint FILE | --preset small] [--dir DIR]
Also run by bench/run_all.py as its `remote` group (skipped, saying why, without nginx or s3rver).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import remote_servers  # noqa: E402  (the tests' nginx and s3rver start-up)

CONCURRENCY = (1, 4, 16)


def missing_servers():
    """Why the remote group cannot run here, or None."""
    if remote_servers.Nginx("/nonexistent").exe is None:
        return "nginx is not installed (apt-get install nginx)"
    if remote_servers.s3rver_command() is None:
        return "s3rver is not installed (scripts/setup.sh installs it with npm into build-deps/s3rver)"
    return None


def _check(r, cmd):
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


def curl_args(target):
    """curl's arguments for `target` ({"url", "s3"}): S3 requests signed with SigV4 by curl (with the
    payload hash header that S3 requires of V4 requests)."""
    if not target["s3"]:
        return [target["url"]]
    server = target["s3"]
    return ["--aws-sigv4", f"aws:amz:{server.region}:s3", "--user", f"{server.creds.key}:{server.creds.secret}",
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", target["url"]]


def curl_gbps(target, size, n):
    """One whole-object curl (n=1), or n ranged curls at once covering the object."""
    if n == 1:
        cmd = ["curl", "-sf", "-o", "/dev/null", "-w", "%{time_total} %{size_download}"] + curl_args(target)
        seconds, got = _check(subprocess.run(cmd, capture_output=True, text=True), cmd).split()
        if int(got) != size:
            sys.exit(f"curl fetched {got} bytes of {size}: {' '.join(cmd)}")
        return size / float(seconds) / 1e9
    part = -(-size // n)
    cmds = [["curl", "-sf", "-o", "/dev/null", "-w", "%{size_download}", "-r", f"{a}-{min(a + part, size) - 1}"]
            + curl_args(target) for a in range(0, size, part)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
    outs = [p.communicate() for p in procs]
    seconds = time.perf_counter() - t0
    for p, (out, err), c in zip(procs, outs, cmds):
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(c)}\n{err}")
    got = sum(int(out) for out, _ in outs)
    if got != size:
        sys.exit(f"{n} ranged curls fetched {got} bytes of {size}")
    return size / seconds / 1e9


def ours(wl, target, n, env):
    """The load report of `weightloader load URL` at concurrency n."""
    cmd = [wl, "load", target["name"], "--json", "-q", "--kw", f"concurrency={n}"]
    out = _check(subprocess.run(cmd, capture_output=True, text=True, env=env), cmd)
    return json.loads(out[out.index("{"):])


def stat(values):
    return statistics.median(values), min(values), max(values)


def reads_urls(cli):
    """Whether a build's CLI loads http(s):// and s3:// URLs (earlier builds did not)."""
    r = subprocess.run([cli, "load", "--help"], capture_output=True, text=True)
    return "s3://" in r.stdout


def measure(checkpoint, build, runs, baseline_build="", workdir=None):
    """Rows (target, label, [GB/s per run], note) for the checkpoint file served by nginx and s3rver."""
    size = os.path.getsize(checkpoint)
    before = os.path.join(baseline_build, "weightloader") if baseline_build else ""
    if before and not reads_urls(before):
        print(f"remote: the baseline {before} cannot read URLs: ours only", file=sys.stderr)
        before = ""
    builds = ([("before", before)] if before else []) + [("ours", os.path.join(build, "weightloader"))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="wl-remote-bench-", dir=workdir) as tmp:
        nginx = remote_servers.Nginx(os.path.join(tmp, "nginx")).start()
        s3 = None
        try:
            os.makedirs(os.path.join(tmp, "s3rver"))
            s3 = remote_servers.S3rver(os.path.join(tmp, "s3rver")).start()
            url = nginx.put("model.safetensors", checkpoint)
            s3_url = s3.put("model.safetensors", checkpoint)
            targets = [
                {"what": "http (nginx)", "name": url, "url": url, "s3": None, "env": dict(os.environ)},
                {"what": "s3 (s3rver)", "name": s3_url, "s3": s3,
                 "url": f"{s3.endpoint}/{s3.bucket}/model.safetensors", "env": {**os.environ, **s3.env()}},
            ]
            for t in targets:
                rows += measure_target(t, size, builds, runs)
        finally:
            if s3 is not None:
                s3.stop()
            nginx.stop()
    return rows


def measure_target(t, size, builds, runs):
    limit = {n: [] for n in CONCURRENCY}
    got = {(who, n): [] for who, _ in builds for n in CONCURRENCY}
    curl_gbps(t, size, 1)  # warms the server's page cache
    for _ in range(runs):  # interleaved: drift in the machine's load hits every figure alike
        for n in CONCURRENCY:
            limit[n].append(curl_gbps(t, size, n))
            for who, wl in builds:
                r = ours(wl, t, n, t["env"])
                if not 0 < r["bytes_read"] <= size:
                    sys.exit(f"{wl} read {r['bytes_read']} bytes of a {size}-byte object")
                got[(who, n)].append(r["gbps"])
    best = max(stat(limit[n])[0] for n in CONCURRENCY)
    rows = []
    for n in CONCURRENCY:
        what = "one curl, whole object" if n == 1 else f"{n} ranged curls at once"
        rows.append((t["what"], f"curl: {what}", limit[n], "the loopback limit"))
        for who, _ in builds:
            med = stat(got[(who, n)])[0]
            rows.append((t["what"], f"{who}: weightloader load, concurrency={n}", got[(who, n)],
                         f"{med / stat(limit[n])[0]:.2f}x curl at the same concurrency, {med / best:.2f}x curl's best"))
    return rows


def synth(wl, directory, preset):
    path = os.path.join(directory, f"st-{preset}", "model.safetensors")
    if not os.path.exists(path):
        cmd = [wl, "synth", os.path.dirname(path), "--preset", preset, "--dtype", "f32"]
        _check(subprocess.run(cmd, capture_output=True, text=True), cmd)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--baseline-build", default="", help="an earlier build to measure the same loads with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--checkpoint", default="", help="a safetensors file (default: `weightloader synth` --preset)")
    ap.add_argument("--preset", default="small", help="synth preset when no --checkpoint is given")
    ap.add_argument("--dir", default="/tmp/wl-bench-remote")
    a = ap.parse_args()
    why = missing_servers()
    if why:
        sys.exit(f"remote benchmark skipped: {why}")
    os.makedirs(a.dir, exist_ok=True)
    checkpoint = a.checkpoint or synth(os.path.join(a.build, "weightloader"), a.dir, a.preset)
    size = os.path.getsize(checkpoint)
    print(f"{checkpoint}: {size / 1e9:.2f} GB, median of {a.runs} runs (min..max)\n")
    print("| served by | what | GB/s (min..max) | notes |\n| --- | --- | --- | --- |")
    for target, label, values, note in measure(checkpoint, a.build, a.runs, a.baseline_build, a.dir):
        med, lo, hi = stat(values)
        print(f"| {target} | {label} | {med:.2f} ({lo:.2f}..{hi:.2f}) | {note} |")


if __name__ == "__main__":
    main()
