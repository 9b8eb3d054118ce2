"""MPI tensor parallelism: what 1, 2 and 4 ranks (one process each, under mpirun) read and hold
while loading the suite's synthetic checkpoint, each reading only its slice, against the common
approach, in the same run: every rank reads the whole checkpoint into memory and keeps its slice
(bench/mpi_load_ranks.cpp --load-whole).

Per rank count and mode: the bytes all ranks read together / the checkpoint's bytes, the load time
of the slowest rank (median of --runs, warm page cache), the peak RSS of the largest rank against
the target  slice + staging bound + the RSS the process had before loading; then whole / slices
ratios. Prints a markdown table (it does not write bench/RESULTS.md).

Usage: build-deps/venv/bin/python bench/mpi_tp_ranks.py [--preset small] [--layers N] [--runs 3]
                                              [--dir /tmp/wl-bench] [--build build]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_all import PRESET_LAYERS, ROOT, run, size_of, stat, warm  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def one_load(program, ranks, checkpoint, whole):
    warm(checkpoint)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small", choices=sorted(PRESET_LAYERS))
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/wl-bench")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("mpirun not found (apt install openmpi-bin)")
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
