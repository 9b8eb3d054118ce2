#!/usr/bin/env bash
# Runs each libFuzzer target of fuzz/ (built with ASan + UBSan into build-asan/fuzz/ by
# scripts/build-asan.sh) for SECONDS (default 30), one after the other, from seeds that
# fuzz/make_seeds.sh writes. A crash, leak, timeout (>10 s per input) or an allocation above 512 MiB
# fails the run; the input that caused it is left in build-fuzz/artifacts/<target>/ (reproduce:
# build-asan/fuzz/fuzz_<target> FILE).
# Usage: scripts/fuzz.sh [SECONDS] [target ...]     (targets: the names of fuzz/fuzz_*.cpp without fuzz_)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
scripts/build-asan.sh  # nothing to do when scripts/test-sanitizers.sh has just built it
fuzz/make_seeds.sh build/weightloader build-fuzz/seeds

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls fuzz/fuzz_*.cpp | sed 's|fuzz/fuzz_||; s|\.cpp$||'))
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# No target writes files: each input reaches its parser as a memory byte source (fuzz/fuzz_input.hpp).
failed=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  echo "fuzz: $t for ${seconds}s" >&2
  # The corpus grows across runs in build-fuzz/corpus; the seeds are only read.
  if ! "build-asan/fuzz/fuzz_$t" "build-fuzz/corpus/$t" "build-fuzz/seeds/$t" -max_total_time="$seconds" \
       -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/artifacts/$t/" >"build-fuzz/$t.log" 2>&1; then
    failed+=("$t")
    tail -n 40 "build-fuzz/$t.log" >&2
  fi
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE' "build-fuzz/$t.log" | tr '\n' ' ' >&2 || true
  echo >&2
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in build-fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets clean" >&2
