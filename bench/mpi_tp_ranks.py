"""MPI tensor parallelism: what 1, 2 and 4 ranks (one process each, under mpirun) read and hold
while loading the suite's synthetic checkpoint, each reading only its slice, against the common
approach, in the same run: every rank reads the whole checkpoint into memory and keeps its slice
(bench/mpi_load_ranks.cpp --load-whole).

Per rank count and mode: the bytes all ranks read together / the checkpoint's bytes, the load time
of the slowest rank (median of --runs, warm page cache), the peak RSS of the largest rank against
the target  slice + staging bound + the RSS the process had before loading; then whole / slices
ratios. Prints a markdown table (it does not write bench/RESULTS.md).

With --remote: the ranks stream a checkpoint (stories260K, or --model FILE) from loopback nginx
through a proxy that adds --latency-ms of round trip to every request (remote_servers.DelayProxy;
no tc/netem), each rank through its own port, so that nginx's log counts every rank's requests.
`weightloader generate -n 1` under mpirun -np --ranks, per added latency: requests per rank (GETs,
HEADs), bytes sent per rank, each rank's read seconds and the job's wall time, against one process
reading the whole file the same way (np 1). Modes: the cost model as configured (WL_HTTP_LATENCY_MS,
WL_HTTP_BANDWIDTH_MBPS; default), requests priced at nothing (WL_HTTP_LATENCY_MS=0: no gap read),
the cost model at the proxy's own latency, and with --baseline-build DIR an earlier build's CLI.

Usage: build-deps/venv/bin/python bench/mpi_tp_ranks.py [--preset small] [--layers N] [--runs 3]
                                              [--dir /tmp/wl-bench] [--build build]
       build-deps/venv/bin/python bench/mpi_tp_ranks.py --remote [--model FILE --tokenizer FILE]
                                              [--ranks 4] [--latency-ms 0 5 20] [--runs 3]
                                              [--build build] [--baseline-build DIR]
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_all import PRESET_LAYERS, ROOT, read_through, run, size_of, stat  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def one_load(program, ranks, checkpoint, whole):
    read_through(checkpoint)  # warm page cache
    cmd = MPIRUN + ["-np", str(ranks), program, checkpoint] + (["--load-whole"] if whole else [])
    out = subprocess.run(cmd, text=True, capture_output=True, env=MPI_ENV)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["per_rank"]


def summarise(runs, checkpoint_bytes):
    last = runs[-1]
    read = sum(r["bytes_read"] for r in last)
    rss = max(r["peak_rss"] for r in last)
    target = max(r["slice_bytes"] + r["staging_bound"] + r["base_rss"] for r in last)
    return {"read_ratio": read / checkpoint_bytes, "seconds": stat([max(r["seconds"] for r in run) for run in runs]),
            "peak_rss": rss, "rss_target": target, "per_rank_read": [r["bytes_read"] for r in last]}


READ_LINE = re.compile(r"^rank (\d+): read .* in ([0-9.]+) s", re.M)


def remote_generate(cli, ranks, url, tokenizer, ports, env):
    """One `generate -n 1` under mpirun, rank r's requests through ports[r]; (each rank's read
    seconds, wall seconds of the job)."""
    wrap = ["sh", "-c", f'set -- {" ".join(map(str, ports))} "$@"; shift $OMPI_COMM_WORLD_RANK; P=$1; '
                        f'shift $(({len(ports)} - $OMPI_COMM_WORLD_RANK)); http_proxy=http://127.0.0.1:$P exec "$@"', "sh"]
    cmd = MPIRUN + ["-np", str(ranks)] + wrap + [cli, "generate", "--model", url, "--tokenizer", tokenizer,
                                                 "-t", "0", "-n", "1"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, text=True, capture_output=True, env=dict(MPI_ENV, **env))
    wall = time.monotonic() - t0
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr}")
    reads = {int(r): float(sec) for r, sec in READ_LINE.findall(out.stderr)}
    return [reads[r] for r in range(ranks)], wall


def remote_main(a):
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import remote_servers  # noqa: E402  (the tests' nginx, and the delaying proxy)
    stories = os.path.join(os.environ.get("WL_TESTDATA_DIR", os.path.join(ROOT, "..", "shared", "testdata")),
                           "llama2c-stories260K")
    model = a.model or os.path.join(stories, "stories260K.bin")
    tokenizer = a.tokenizer or os.path.join(stories, "tok512.bin")
    cli = os.path.join(a.build, "weightloader")
    size = os.path.getsize(model)
    print(f"Checkpoint: {os.path.basename(model)} ({size / 1e6:.2f} MB), served by loopback nginx behind a proxy adding "
          f"a round trip to every request; `generate -n 1` under mpirun -np {a.ranks} (shared memory) against -np 1; "
          f"median of {a.runs} runs (min..max).\n")
    print("| added RTT | mode | ranks | GETs per rank (max) | HEADs rank 0 / others | MB sent per rank (max) | "
          "read s, slowest rank | job wall s | single process: read s / wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for latency in a.latency_ms:
        modes = [("cost model (default)", cli, {}), ("no gap read (WL_HTTP_LATENCY_MS=0)", cli, {"WL_HTTP_LATENCY_MS": "0"}),
                 (f"cost model at {latency:g} ms", cli, {"WL_HTTP_LATENCY_MS": str(max(latency, 0.05))})]
        if a.baseline_build:
            modes.append(("baseline build", os.path.join(a.baseline_build, "weightloader"), {}))
        nginx = remote_servers.Nginx(tempfile.mkdtemp(prefix="wl-bench-nginx-"), extra_ports=a.ranks).start()
        proxy = remote_servers.DelayProxy(nginx.extra_ports, latency / 2000).start()
        try:
            url = nginx.put("m/" + os.path.basename(model), model)
            results = collections.defaultdict(list)
            for _ in range(a.runs):  # modes alternate run by run
                for name, program, env in [("single", cli, {})] + modes:
                    ranks = 1 if name == "single" else a.ranks
                    before = len(nginx.log())
                    reads, wall = remote_generate(program, ranks, url, tokenizer, proxy.ports, env)
                    per = collections.defaultdict(collections.Counter)
                    for e in nginx.log()[before:]:
                        rank = nginx.extra_ports.index(e.port)  # the proxy forwards port r to nginx's port r
                        per[rank][e.method] += 1
                        per[rank]["sent"] += e.sent
                    results[name].append((reads, wall, per))
            single_read = statistics.median(max(r[0]) for r in results["single"])
            single_wall = statistics.median(r[1] for r in results["single"])
            for name, _, _ in modes:
                runs = results[name]
                per = runs[-1][2]
                gets = max(per[r]["GET"] for r in range(a.ranks))
                heads = f"{per[0]['HEAD']} / {max(per[r]['HEAD'] for r in range(1, a.ranks)) if a.ranks > 1 else 0}"
                sent = max(per[r]["sent"] for r in range(a.ranks)) / 1e6
                read = stat([max(r[0]) for r in runs])
                wall = stat([r[1] for r in runs])
                print(f"| {latency:g} ms | {name} | {a.ranks} | {gets} | {heads} | {sent:.2f} | {read[0]:.3f} ({read[1]:.3f}..{read[2]:.3f}) | "
                      f"{wall[0]:.2f} ({wall[1]:.2f}..{wall[2]:.2f}) | {single_read:.3f} / {single_wall:.2f} |")
        finally:
            proxy.stop()
            nginx.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small", choices=sorted(PRESET_LAYERS))
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/wl-bench")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--remote", action="store_true", help="ranks streaming from loopback nginx with added latency")
    ap.add_argument("--model", help="--remote: the checkpoint file (default stories260K)")
    ap.add_argument("--tokenizer", help="--remote: its tokenizer (default tok512.bin)")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--latency-ms", type=float, nargs="+", default=[0, 5, 20])
    ap.add_argument("--baseline-build", help="--remote: an earlier build directory, measured beside this one")
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("mpirun not found (apt install openmpi-bin)")
    if a.remote:
        remote_main(a)
        return
    program = os.path.join(a.build, "bench", "wl_mpi_load_ranks")
    wl = os.path.join(a.build, "weightloader")
    # The suite's checkpoint (bench/run_all.py writes the same one under the same name).
    tag = f"{a.preset}-{a.layers or PRESET_LAYERS[a.preset]}"
    checkpoint = os.path.join(a.dir, f"st-{tag}")
    if not os.path.exists(checkpoint):
        os.makedirs(a.dir, exist_ok=True)
        layers = ["--layers", str(a.layers)] if a.layers else []
        run([wl, "synth", checkpoint, "--preset", a.preset, "--dtype", "f32"] + layers)
    checkpoint_bytes = size_of(os.path.join(checkpoint, "model.safetensors"))

    rows = {(ranks, whole): [] for ranks in (1, 2, 4) for whole in (False, True)}
    for _ in range(a.runs):  # the modes alternate run by run, so that both see the same machine state
        for key in rows:
            rows[key].append(one_load(program, key[0], checkpoint, key[1]))
    mib = 1 << 20
    print(f"Checkpoint: synthetic Llama preset `{a.preset}`, {checkpoint_bytes / 1e6:.1f} MB of F32 safetensors; "
          f"median of {a.runs} warm runs; one process per rank (mpirun, shared memory).\n")
    print("| ranks | mode | read by all ranks / checkpoint | load s (slowest rank) | peak RSS per rank | RSS target (slice + staging + base) | RSS / target |")
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for ranks in (1, 2, 4):
        for whole in (False, True):
            s = summarise(rows[(ranks, whole)], checkpoint_bytes)
            summary[(ranks, whole)] = s
            med, lo, hi = s["seconds"]
            print(f"| {ranks} | {'whole, then slice' if whole else 'own slice'} | {s['read_ratio']:.3f} | {med:.3f} ({lo:.3f}..{hi:.3f}) | "
                  f"{s['peak_rss'] / mib:.0f} MiB | {s['rss_target'] / mib:.0f} MiB | {s['peak_rss'] / s['rss_target']:.2f} |")
    print("\n| ranks | bytes read: whole / slices | load time: whole / slices | peak RSS: whole / slices |")
    print("|---|---|---|---|")
    for ranks in (1, 2, 4):
        s, w = summary[(ranks, False)], summary[(ranks, True)]
        print(f"| {ranks} | {w['read_ratio'] / s['read_ratio']:.2f} | {w['seconds'][0] / s['seconds'][0]:.2f} | "
              f"{w['peak_rss'] / s['peak_rss']:.2f} |")


if __name__ == "__main__":
    main()
