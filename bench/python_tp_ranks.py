"""Tensor-parallel loading from Python, 1, 2 and 4 ranks (gloo processes on 127.0.0.1), each rank's
module holding only its slices under vLLM's names (fused qkv_proj and gate_up_proj):
  ours  load_into(module, checkpoint): each rank reads only its slices
  peer  the common approach: every rank torch.loads the whole PyTorch .bin, then copies its slices
        (narrow + copy_) into the same module
Per rank: load seconds (from a barrier), bytes read (ours: the report; both: /proc/self/io rchar),
peak RSS over the RSS before the load, against the bound slice + staging. The checkpoint's page
cache is warm. Prints a table with ratios (peer / ours) and, last, one JSON line for run_all.py.

Usage: build-deps/venv/bin/python bench/python_tp_ranks.py SAFETENSORS_DIR PYTORCH_BIN
                                 [--ranks 1 2 4] [--runs 3]
The inputs: bench/run_all.py's (`weightloader synth DIR --preset small`, and run_all.py --make-bin).
"""
import argparse
import datetime
import json
import os
import resource
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peer import module_for  # noqa: E402  (the module tree bench/python_load_into.py uses)

import weightloader as wl  # noqa: E402
from weightloader.tensor_parallel import plan_shards  # noqa: E402

STAGING_BOUND = 32 << 20  # the I/O engine's default staging memory, all threads together
COLUMN = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "embed_tokens", "lm_head")
ROW = ("o_proj", "down_proj")


def rank_shapes(checkpoint, size):
    """A rank's parameters as vLLM declares them: column-parallel rows and row-parallel columns
    divided by `size`, q/k/v and gate/up fused, norms whole."""
    out = {}
    for name, shape in checkpoint.items():
        shape = list(shape)
        if any(f".{c}." in f".{name}" for c in COLUMN):
            shape[0] //= size
        elif any(f".{r}." in name for r in ROW):
            shape[1] //= size
        for fused, parts in (("qkv_proj", ("q_proj", "k_proj", "v_proj")), ("gate_up_proj", ("gate_proj", "up_proj"))):
            for part in parts:
                if f".{part}." in name:
                    name = name.replace(f".{part}.", f".{fused}.")
                    if name in out:
                        shape[0] += out[name][0]
        out[name] = shape
    return out


def rchar():
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


def peer_load(module, binfile, shards):
    state = torch.load(binfile, map_location="cpu")
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            for s in shards.get(name, []):
                dst = p.narrow(0, s.row_offset, s.end - s.begin) if s.dim == 0 else p
                dst.copy_(state[s.source].narrow(s.dim, s.begin, s.end - s.begin))
            if name not in shards:
                p.copy_(state[name])
    del state


def rank_main(rank, size, port, st, binfile, way, out_dir):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=120))
    weights = wl.HfWeightLoader().get_weights(st)
    checkpoint = {n: weights.info(n)["shape"] for n in weights}
    shapes = rank_shapes(checkpoint, size)
    module = module_for(shapes)
    shards = plan_shards(shapes, checkpoint, rank, size)
    dist.barrier()
    before, io0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, rchar(), time.perf_counter()
    if way == "ours":
        report = wl.load_into(module, st, progress=False).report
        bytes_read = report["bytes_read"]
    else:
        peer_load(module, binfile, shards)
        bytes_read = None
    seconds = time.perf_counter() - t0
    io = rchar() - io0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    slice_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
    dist.barrier()
    with open(os.path.join(out_dir, f"{way}-{size}-{rank}.json"), "w") as f:
        json.dump({"seconds": seconds, "bytes_read": bytes_read if bytes_read is not None else io, "rchar": io,
                   "rss_growth": peak - before, "slice_bytes": slice_bytes}, f)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(size, st, binfile, way, out_dir):
    mp.start_processes(rank_main, args=(size, free_port(), st, binfile, way, out_dir), nprocs=size, start_method="spawn")
    outs = []
    for r in range(size):
        with open(os.path.join(out_dir, f"{way}-{size}-{r}.json")) as f:
            outs.append(json.load(f))
    return outs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("safetensors")
    ap.add_argument("pytorch_bin")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/wl-bench-tp")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    for f in (a.safetensors, a.pytorch_bin):  # warm the page cache
        for path in ([os.path.join(f, n) for n in os.listdir(f)] if os.path.isdir(f) else [f]):
            with open(path, "rb") as fh:
                while fh.read(16 << 20):
                    pass
    model_bytes = sum(os.path.getsize(os.path.join(a.safetensors, n)) for n in os.listdir(a.safetensors)
                      if n.endswith(".safetensors"))
    rows = []
    print(f"| ranks | way | load s (slowest rank, median of {a.runs}) | MB read per rank | peak RSS growth per rank, MB "
          f"| slice + staging bound, MB | peer / ours: time | peer / ours: bytes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for size in a.ranks:
        result = {}
        for way in ("ours", "peer"):
            runs = [one_run(size, a.safetensors, a.pytorch_bin, way, a.dir) for _ in range(a.runs)]
            result[way] = {
                "seconds": statistics.median(max(o["seconds"] for o in run) for run in runs),
                "bytes_read": max(o["bytes_read"] for o in runs[-1]),
                "rss_growth": max(o["rss_growth"] for o in runs[-1]),
                "bound": max(o["slice_bytes"] for o in runs[-1]) + STAGING_BOUND}
        ours, peer = result["ours"], result["peer"]
        for way, r in result.items():
            ratios = (f"{peer['seconds'] / ours['seconds']:.2f} | {peer['bytes_read'] / ours['bytes_read']:.2f}"
                      if way == "peer" else " | ")
            bound = f"{r['bound'] / 1e6:.1f}" if way == "ours" else "(unbounded: the whole file)"
            print(f"| {size} | {way} | {r['seconds']:.3f} | {r['bytes_read'] / 1e6:.1f} | {r['rss_growth'] / 1e6:.1f} "
                  f"| {bound} | {ratios} |")
        rows.append({"ranks": size, **{f"{w}_{k}": v for w, r in result.items() for k, v in r.items()}})
    print(json.dumps({"model_bytes": model_bytes, "rows": rows}))


if __name__ == "__main__":
    main()
