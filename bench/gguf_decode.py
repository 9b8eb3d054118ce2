"""Decode speed of every GGML block type, in one warm process: weightloader's safe_open + get_tensor
(F32) beside gguf-py's gguf.quants.dequantize of the same tensors (the reader opened once, outside
the timing), on python_peers.py's random-<type>.gguf files (16 Mi elements of random blocks each,
made with gguf-py when missing). Best of N passes over the file's tensors each; ns per element, the
ratio to gguf-py and to weightloader's own Q4_K. python_peers.py --table measures the same files
end to end (fresh process, fresh memory), where the fixed costs hide most of the decoding.

    PYTHONPATH=build/python build-deps/venv/bin/python bench/gguf_decode.py [--dir /tmp/wl-gguf-bench] [--runs 5] [--types q4_k,iq2_xxs]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import python_peers  # noqa: E402


def best_of(runs, fn):
    fn()  # warm-up: the page cache, the allocator, gguf-py's grids
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/tmp/wl-gguf-bench")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--build", default="build")
    p.add_argument("--types", default=",".join(python_peers.BLOCK_TYPES))
    a = p.parse_args()
    import gguf
    import weightloader as wl
    types = a.types.split(",")
    os.makedirs(a.dir, exist_ok=True)
    files = python_peers.files_in(a.dir, os.path.join(a.build, "weightloader"), set(types))
    print("| type | weightloader ns/element | gguf-py ns/element | gguf-py / weightloader | weightloader / its Q4_K |")
    print("| --- | --- | --- | --- | --- |")
    q4_k = None
    for t in types:
        path = files[t]
        reader = gguf.GGUFReader(path)
        elems = sum(int(x.n_elements) for x in reader.tensors)
        with wl.safe_open(path, framework="np") as f:
            keys = list(f.keys())
            ours = best_of(a.runs, lambda: [f.get_tensor(k) for k in keys])
        peer = best_of(a.runs, lambda: [gguf.quants.dequantize(x.data, x.tensor_type) for x in reader.tensors])
        if t == "q4_k":
            q4_k = ours
        print(f"| {t.upper()} | {ours / elems * 1e9:.2f} | {peer / elems * 1e9:.2f} | {peer / ours:.1f}x | "
              f"{ours / q4_k:.2f} |" if q4_k else f"| {t.upper()} | {ours / elems * 1e9:.2f} | {peer / elems * 1e9:.2f} | "
              f"{peer / ours:.1f}x | |", flush=True)


if __name__ == "__main__":
    main()
