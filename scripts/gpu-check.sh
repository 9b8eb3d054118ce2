#!/usr/bin/env bash
# The device check for loads into CUDA memory, for a GPU machine (an H200) that has CMake, ninja,
# nvcc, Python with PyTorch + CUDA, safetensors and transformers but none of our Debian packages:
#
#   scripts/gpu-check.sh --prepare   # here: copy the core's few dependencies into shared/gpu-deps
#   scripts/gpu-check.sh             # there: build, test, benchmark; log and results under $OUT
#
# There it builds the core + the CUDA component only (-DWL_GPU_ONLY=ON, dependencies from
# shared/gpu-deps), runs the CUDA tests, writes a synthetic F32 checkpoint (WL_GPU_CHECK_PRESET,
# default 2gb: 2.4 GB), reads it once into the page cache and measures, in one run: the H2D limit
# (cudaMemcpy from pinned memory), the page-cache read limit, weightloader F32 and F32->BF16 into
# device memory, safetensors.torch.load_file(device="cuda") and torch.load(map_location="cuda") +
# load_state_dict. $OUT/results.md gets the table and the targets; $OUT/gpu-check.log everything.
#
# GPU_CHECK_DRY_RUN=1 runs the steps that need no GPU here (prepare, configure and build the
# GPU-only tree, the CUDA tests, which then skip, the peers on the CPU with a tiny checkpoint) and
# skips the rest, saying so.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$repo/shared/gpu-deps"
dry=${GPU_CHECK_DRY_RUN:-0}
out=${OUT:-$repo/build-gpu-out}
build="$repo/build-gpu"
preset=${WL_GPU_CHECK_PRESET:-2gb}
reps=${WL_GPU_CHECK_REPS:-3}
jobs=${WL_GPU_CHECK_JOBS:-$(nproc)}
# The interpreter with torch: Debian's here (the dry run); on the GPU machine, which has no Debian
# packages, its own Python with PyTorch + CUDA and safetensors, first on its PATH.
if [[ "$dry" == 1 ]]; then
  py=${WL_GPU_CHECK_PYTHON:-$repo/build-deps/venv/bin/python}
else
  py=${WL_GPU_CHECK_PYTHON:-$(command -v python3)}
fi

prepare() {
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/lib"
  for d in fmt nlohmann hwy gtest openssl liburing; do cp -r "/usr/include/$d" "$deps/include/"; done
  cp /usr/include/liburing.h "$deps/include/"
  cp /usr/include/x86_64-linux-gnu/openssl/* "$deps/include/openssl/"  # the multiarch configuration headers
  cp -a /usr/lib/x86_64-linux-gnu/libhwy.so* /usr/lib/x86_64-linux-gnu/libgtest.a \
    /usr/lib/x86_64-linux-gnu/libgtest_main.a /usr/lib/x86_64-linux-gnu/libcrypto.so* /usr/lib/x86_64-linux-gnu/liburing.a \
    "$deps/lib/"
  echo "prepared $deps ($(du -sh "$deps" | cut -f1)); carry shared/gpu-deps with the run"
}

if [[ "${1:-}" == "--prepare" ]]; then
  prepare
  exit 0
fi

mkdir -p "$out"
log="$out/gpu-check.log"
exec > >(tee "$log") 2>&1
step() { echo "== $(date -u +%H:%M:%S) $*"; }

if [[ "$dry" == 1 && ! -d "$deps" ]]; then prepare; fi
[[ -f "$deps/include/fmt/format.h" ]] || { echo "no $deps: run scripts/gpu-check.sh --prepare here first"; exit 1; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi: not here"
echo "cores $(nproc), $(grep MemTotal /proc/meminfo)"

step "configure and build the core + CUDA component (-j$jobs)"
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWL_GPU_ONLY=ON -DWL_GPU_DEPS="$deps" \
  -DCUDAToolkit_ROOT="${CUDAToolkit_ROOT:-/usr/local/cuda}" "${launcher[@]}"
cmake --build "$build" -j"$jobs"

step "CUDA tests"
"$build/tests/cuda/weightloader_cuda_tests" --gtest_output="xml:$out/cuda_tests.xml" || tests_failed=1

results() {
  step "results"
  "$py" - "$out/bench.tsv" "$out/peers.tsv" "$out/results.md" <<'PY'
import os
import sys

rows = {}
for path in sys.argv[1:3]:
    if os.path.exists(path):
        for line in open(path):
            name, gbs, secs, notes = line.rstrip("\n").split("\t", 3)
            if name != "measurement":
                rows[name] = (gbs, secs, notes)


def rate(name):
    try:
        return float(rows[name][0])
    except (KeyError, ValueError):
        return None


limits = [r for r in (rate("h2d_limit"), rate("page_cache_limit")) if r]
out = ["| measurement | GB/s | best s | notes |", "|---|---|---|---|"]
out += [f"| {n} | {g} | {s} | {t} |" for n, (g, s, t) in rows.items()]
out.append("")
for ours in ("weightloader_f32", "weightloader_f32_to_bf16"):
    if rate(ours) and len(limits) == 2:
        out.append(f"- {ours} / min(page cache, H2D) = {rate(ours) / min(limits):.2f} (target >= 0.8)")
    if rate(ours) and rate("safetensors_load_file"):
        out.append(f"- {ours} / safetensors load_file = {rate(ours) / rate('safetensors_load_file'):.2f} (target >= 2)")
out.append("- pinned memory: the ring is the staging bound (the weightloader rows' notes)")
open(sys.argv[3], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
}

ckpt="$build/checkpoint-$preset"
if [[ "$dry" == 1 ]]; then
  step "dry run: no GPU benchmark; the peers on the CPU with a tiny checkpoint"
  ckpt="$build/checkpoint-tiny"
  rm -rf "$ckpt"
  "$build/tests/cuda/wl_bench_cuda" "$ckpt" --synth tiny --reps 0
  "$build/tests/cuda/wl_bench_cuda" "$ckpt" --reps 1 || echo "(wl_bench_cuda needs a GPU: it fails here, as it should)"
  "$py" "$repo/scripts/gpu_check_peers.py" "$ckpt" cpu 1 "$out/peers.tsv"
  results
  exit "${tests_failed:-0}"
fi

step "checkpoint ($preset) into the page cache"
[[ -d "$ckpt" ]] || "$build/tests/cuda/wl_bench_cuda" "$ckpt" --synth "$preset" --reps 0
cat "$ckpt"/*.safetensors > /dev/null

step "benchmark: limits and weightloader into device memory"
"$build/tests/cuda/wl_bench_cuda" "$ckpt" --reps "$reps" | tee "$out/bench.tsv"

step "benchmark: safetensors and torch.load into device memory"
"$py" "$repo/scripts/gpu_check_peers.py" "$ckpt" cuda "$reps" "$out/peers.tsv"

results
exit "${tests_failed:-0}"
