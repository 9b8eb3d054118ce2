"""refresh(module, newer) against a full load_into of the same newer checkpoint (README, "Refresh a
live model"): a module of `--tensors` F32 matrices of `--side`² (16 MiB each by default), two checkpoints written with
save_file(tensor_digests=True) that differ in `--changed` percent of them, the module loaded from
the first; then, alternating, a refresh to the second and a full load of it into the same module
(warm page cache), medians of `--runs`. Reports bytes read and time as a share of the full load.

    build-deps/venv/bin/python bench/refresh_changed.py [--tensors 100] [--side 2048] [--changed 1] [--runs 7] [--dir /tmp/wl-refresh-bench]
"""
import argparse
import os
import statistics
import time

import torch

import weightloader as wl


class Stack(torch.nn.Module):
    def __init__(self, n, side):
        super().__init__()
        self.w = torch.nn.ParameterList(torch.nn.Parameter(torch.empty(side, side), requires_grad=False) for _ in range(n))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tensors", type=int, default=100)
    p.add_argument("--side", type=int, default=2048, help="each tensor a side x side F32 matrix")
    p.add_argument("--changed", type=float, default=1.0, help="percent of the tensors the newer checkpoint changes")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--dir", default="/tmp/wl-refresh-bench")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    old = {f"w.{i}": torch.randn(a.side, a.side, generator=g) for i in range(a.tensors)}
    new = dict(old)
    step = max(1, round(100 / a.changed))
    for i in range(0, a.tensors, step):
        new[f"w.{i}"] = old[f"w.{i}"] + 1
    paths = [os.path.join(a.dir, f"step-{s}.safetensors") for s in (1, 2)]
    for path, tensors in zip(paths, (old, new)):
        wl.save_file(tensors, path, tensor_digests=True)
    model = Stack(a.tensors, a.side)
    full_s, refresh_s, full_bytes, refresh_bytes = [], [], 0, 0
    for _ in range(a.runs):
        wl.load_into(model, paths[0])  # back to the older step, then forward both ways
        t = time.perf_counter()
        r = wl.refresh(model, paths[1])
        refresh_s.append(time.perf_counter() - t)
        refresh_bytes = r.bytes_read
        wl.load_into(model, paths[0])
        t = time.perf_counter()
        full_bytes = wl.load_into(model, paths[1]).report.bytes_read
        full_s.append(time.perf_counter() - t)
    changed = sum(1 for k in new if new[k] is not old[k])
    fs, rs = statistics.median(full_s), statistics.median(refresh_s)
    print(f"| {a.tensors} tensors, {changed} changed ({100 * changed / a.tensors:.1f}%) | bytes read | seconds, median of {a.runs} (min..max) |")
    print("| --- | --- | --- |")
    print(f"| full load_into | {full_bytes / 1e6:.0f} MB | {fs:.3f} ({min(full_s):.3f}..{max(full_s):.3f}) |")
    print(f"| refresh | {refresh_bytes / 1e6:.1f} MB ({refresh_bytes / full_bytes:.2%}) | {rs:.4f} ({min(refresh_s):.4f}..{max(refresh_s):.4f}): {rs / fs:.2%} of the full load |")


if __name__ == "__main__":
    main()
