"""Dequantizing loads against a plain load of the same dense size (README, "Quantized Hugging Face
checkpoints"): a synthetic BF16 Llama (`weightloader synth --preset P --dtype bf16`), the same model
written as GPTQ 4-bit and as FP8 per channel (`weightloader convert --quantize`), each loaded into BF16
parameters already faulted in (`wl_bench_loads reload`, the second of two loads), median of N runs.
GB/s are dense parameter bytes written per second.

    build-deps/venv/bin/python bench/quantized_loads.py [--preset 1gb] [--runs 5] [--dir /tmp/wl-quant-bench] [--build build]
"""
import argparse
import json
import os
import statistics
import subprocess


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="1gb")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--dir", default="/tmp/wl-quant-bench")
    p.add_argument("--build", default="build")
    a = p.parse_args()
    cli, bench = os.path.join(a.build, "weightloader"), os.path.join(a.build, "bench", "wl_bench_loads")
    dense = os.path.join(a.dir, "bf16")
    if not os.path.isdir(dense):
        run(cli, "synth", dense, "--preset", a.preset, "--dtype", "bf16")
    cases = [("BF16 (plain)", dense, None)]
    for method in ("gptq-int4", "fp8-channel"):
        out = os.path.join(a.dir, method)
        if not os.path.isdir(out):
            run(cli, "convert", dense, out, "--quantize", method, "-q")
        cases.append((method, out, method))
    dense_bytes = json.loads(run(bench, "reload", dense, "bf16", "pread"))["bytes_read"]
    print(f"| checkpoint | file bytes | seconds, median of {a.runs} (min..max) | dense GB/s | vs plain BF16 |")
    print("| --- | --- | --- | --- | --- |")
    base = None
    for label, path, _ in cases:
        times, read = [], 0
        for _ in range(a.runs):
            r = json.loads(run(bench, "reload", path, "bf16", "pread"))
            times.append(r["seconds"])
            read = r["bytes_read"]
        med = statistics.median(times)
        base = base or med
        print(f"| {label} | {read / 1e6:.0f} MB | {med:.3f} ({min(times):.3f}..{max(times):.3f}) | "
              f"{dense_bytes / med / 1e9:.2f} | {base / med:.2f}x |")


if __name__ == "__main__":
    main()
