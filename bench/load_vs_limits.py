#!/usr/bin/env python3
"""weightloader load of a >= 1 GB F32 safetensors checkpoint, side by side with the machine's limits.

Measured in one run, on the same bytes, warm (page cache):
  cat FILE > /dev/null           the kernel's page-cache copy through one thread
  memcpy                         one thread, pre-touched buffers (bench/limits.cpp)
  pread, page cache              2 threads, 4 MiB requests into a pre-touched buffer (bench/limits.cpp)
  weightloader load              same dtype (F32) and F32 -> BF16, GB/s of file bytes, peak RSS
Each figure is the median of --runs runs (min..max shown). Writes bench/RESULTS.md.

Usage: bench/load_vs_limits.py [--preset 1gb] [--runs 5] [--dir /tmp/wl-bench] [--build build]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def median_spread(values):
    return statistics.median(values), min(values), max(values)


def fmt(stat, unit="GB/s"):
    med, lo, hi = stat
    return f"{med:.2f} {unit} ({lo:.2f}..{hi:.2f})"


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="1gb")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/wl-bench")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = ap.parse_args()

    wl = os.path.join(args.build, "weightloader")
    limits = os.path.join(args.build, "bench", "wl_limits")
    ckpt = os.path.join(args.dir, f"llama-{args.preset}-f32")
    path = os.path.join(ckpt, "model.safetensors")
    if not os.path.exists(path):
        print(f"generating {ckpt} ...", file=sys.stderr)
        run([wl, "synth", ckpt, "--preset", args.preset, "--dtype", "f32"])
    size = os.path.getsize(path)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache

    cat = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        cat.append(size / (time.perf_counter() - t0) / 1e9)
    lim = json.loads(run([limits, path, "2", str(args.runs)]))

    loads = {}
    for label, dtype in (("F32 -> F32", "f32"), ("F32 -> BF16", "bf16")):
        gbps, rss, param_bytes, base = [], [], 0, []
        for _ in range(args.runs):
            r = json.loads(run([wl, "load", ckpt, "--loader", "local", "--dtype", dtype, "--json", "--quiet"]))
            gbps.append(r["gbps"])
            rss.append(r["peak_rss_bytes"] / 1e9)
            base.append(r["rss_before_load_bytes"] / 1e9)
            param_bytes = r["parameter_bytes"]
            staging = r["staging_bytes"]
        loads[label] = dict(gbps=median_spread(gbps), rss=median_spread(rss), params=param_bytes / 1e9,
                            base=statistics.median(base), staging=staging / 1e9)

    cat_s = median_spread(cat)
    memcpy_s = (lim["memcpy"]["gbps"], lim["memcpy"]["min"], lim["memcpy"]["max"])
    pread_s = (lim["pread_page_cache"]["gbps"], lim["pread_page_cache"]["min"], lim["pread_page_cache"]["max"])
    lines = [
        "# Benchmark results",
        "",
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d')}.",
        f"Checkpoint: synthetic Llama preset `{args.preset}`, one F32 safetensors file of {size / 1e9:.2f} GB, warm page cache.",
        f"Command: `bench/load_vs_limits.py --preset {args.preset} --runs {args.runs}`; median of {args.runs} runs (min..max).",
        "",
        "| what | throughput | ratio to cat | ratio to memcpy | ratio to parallel pread | peak RSS |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| `cat FILE > /dev/null` | {fmt(cat_s)} | 1.00 | | | |",
        f"| memcpy, 1 thread | {fmt(memcpy_s)} | {memcpy_s[0] / cat_s[0]:.2f} | 1.00 | | |",
        f"| pread into touched buffer, 2 threads | {fmt(pread_s)} | {pread_s[0] / cat_s[0]:.2f} | {pread_s[0] / memcpy_s[0]:.2f} | 1.00 | |",
    ]
    for label, r in loads.items():
        g = r["gbps"][0]
        lines.append(
            f"| weightloader load {label} | {fmt(r['gbps'])} | {g / cat_s[0]:.2f} | {g / memcpy_s[0]:.2f} | "
            f"{g / pread_s[0]:.2f} | {r['rss'][0]:.2f} GB (parameters {r['params']:.2f} GB + staging "
            f"{r['staging']:.3f} GB + baseline {r['base']:.3f} GB) |")
    lines += ["", "GB/s counts file bytes read per second (for F32 -> BF16 the parameters receive half as many).", ""]
    text = "\n".join(lines)
    print(text)
    with open(args.results, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
