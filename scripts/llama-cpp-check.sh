#!/usr/bin/env bash
# Checks our GGUF output with llama.cpp itself: builds llama.cpp from a source folder you give
# (github.com/ggerganov/llama.cpp, outside this repository; nothing is downloaded), converts the
# stories260K reference model to GGUF F32, F16 and Q8_0 with the tokenizer found beside it and to
# F32 without one, and runs each conversion there:
#   - F32 with its tokenizer: llama-simple's greedy text from BOS must be run.c's, byte for byte;
#   - F16 and Q8_0: llama-simple loads them and generates;
#   - F32 without a tokenizer (tokenizer.ggml.model "none"): llama.cpp's loader reads it and the
#     logits after ids 1,403,407,261 equal run.c's at position 3 within 1e-4;
#   - the tiny Qwen2 of testdata/hf-tiny-arch as GGUF F32 (architecture qwen2): llama.cpp's logits
#     after its first 16-token sequence equal transformers' within 1e-4 of the row's scale.
# Usage: scripts/llama-cpp-check.sh LLAMA_CPP_SOURCE [BUILD_DIR]   (BUILD_DIR default: /tmp/llama.cpp-build)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
src=$(realpath "$1")
build=${2:-/tmp/llama.cpp-build}
data=../shared/testdata/llama2c-stories260K
[ -f "$src/include/llama.h" ] || { echo "llama-cpp-check: $src is not a llama.cpp source folder (no include/llama.h)" >&2; exit 2; }
[ -f "$data/stories260K.bin" ] || { echo "llama-cpp-check: the reference model is missing: $data/stories260K.bin" >&2; exit 2; }
[ -x build/weightloader ] || scripts/setup.sh

echo "llama-cpp-check: building llama.cpp from $src into $build" >&2
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_SERVER=OFF >/dev/null 2>&1
cmake --build "$build" -j"$(nproc)" --target llama-simple >/dev/null
bin="$build/bin"
g++ -std=c++17 -O1 scripts/llama_cpp_logits.cpp -I"$src/include" -I"$src/ggml/include" -L"$bin" -lllama -lggml \
  -lggml-base -Wl,-rpath,"$bin" -o "$build/wl_llama_cpp_logits"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for type in f32 f16 q8_0; do
  build/weightloader convert "$data/stories260K.bin" "$work/s-$type.gguf" --gguf-type "$type" -q >/dev/null
done
build/weightloader convert "$data/stories260K.bin" "$work/s-none.gguf" --gguf-type f32 --no-tokenizer -q >/dev/null

failed=0
report() { printf '| %-34s | %-4s | %s |\n' "$1" "$2" "$3"; [ "$2" = ok ] || failed=1; }
echo "| our conversion of stories260K | llama.cpp | what it did |"
echo "| --- | --- | --- |"
# llama-simple prints the prompt's BOS as "<s> " before the text run.c prints; 200 positions as run.c's -n 200.
if "$bin/llama-simple" -m "$work/s-f32.gguf" -n 200 "" 2>"$work/f32.log" | sed '1s/^<s> //' >"$work/f32.txt" &&
   cmp -s "$work/f32.txt" "$data/expected_greedy_t0_n200.txt"; then
  report "F32, tokenizer embedded" ok "greedy text from BOS = run.c's, byte for byte ($(wc -c <"$work/f32.txt") bytes)"
else
  report "F32, tokenizer embedded" FAIL "text differs from run.c's (see below)"; tail -5 "$work/f32.log" >&2; head -c 300 "$work/f32.txt" >&2
fi
for type in f16 q8_0; do
  if "$bin/llama-simple" -m "$work/s-$type.gguf" -n 40 "" >"$work/$type.txt" 2>"$work/$type.log" && [ -s "$work/$type.txt" ]; then
    report "${type^^}, tokenizer embedded" ok "loads and generates: $(head -c 60 "$work/$type.txt" | tr '\n' ' ')..."
  else
    report "${type^^}, tokenizer embedded" FAIL "$(grep -m1 -i error "$work/$type.log" || tail -1 "$work/$type.log")"
  fi
done
awk '/^pos 3 /{on=1; next} /^pos /{on=0} on' "$data/expected_logits_first4.txt" >"$work/runc-pos3.txt"
if "$build/wl_llama_cpp_logits" "$work/s-none.gguf" 1 403 407 261 >"$work/none-logits.txt" 2>"$work/none.log"; then
  worst=$(paste "$work/none-logits.txt" "$work/runc-pos3.txt" | awk '{d=$1-$2; if (d<0) d=-d; if (d>m) m=d} END {printf "%.2g", m+0}')
  rows=$(wc -l <"$work/none-logits.txt")
  if [ "$rows" = "$(wc -l <"$work/runc-pos3.txt")" ] && awk -v w="$worst" 'BEGIN {exit !(w <= 1e-4)}'; then
    report "F32, no tokenizer" ok "loads; logits at position 3 = run.c's within $worst ($rows values)"
  else
    report "F32, no tokenizer" FAIL "logits differ from run.c's by $worst ($rows values)"
  fi
else
  report "F32, no tokenizer" FAIL "$(grep -m1 -i error "$work/none.log" || tail -1 "$work/none.log")"
fi
qwen2=../shared/testdata/hf-tiny-arch/qwen2
build/weightloader convert "$qwen2" "$work/qwen2.gguf" --gguf-type f32 -q >/dev/null
# The reference's first sequence and its last position's logits (Debian's interpreter only reads the JSON).
read -ra ids < <(/usr/bin/python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["sequences"][0])' "$qwen2/reference_logits.json")
/usr/bin/python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["logits"][0][-1], sep="\n")' "$qwen2/reference_logits.json" >"$work/qwen2-ref.txt"
if "$build/wl_llama_cpp_logits" "$work/qwen2.gguf" "${ids[@]}" >"$work/qwen2-logits.txt" 2>"$work/qwen2.log"; then
  worst=$(paste "$work/qwen2-logits.txt" "$work/qwen2-ref.txt" |
    awk '{d=$1-$2; if (d<0) d=-d; if (d>m) m=d; a=$2<0?-$2:$2; if (a>s) s=a} END {if (s<1) s=1; printf "%.2g", m/s}')
  if awk -v w="$worst" 'BEGIN {exit !(w <= 1e-4)}'; then
    report "tiny Qwen2, F32, no tokenizer" ok "architecture qwen2 loads; logits at position 15 = transformers' within $worst of the row's scale"
  else
    report "tiny Qwen2, F32, no tokenizer" FAIL "logits differ from transformers' by $worst of the row's scale"
  fi
else
  report "tiny Qwen2, F32, no tokenizer" FAIL "$(grep -m1 -i error "$work/qwen2.log" || tail -1 "$work/qwen2.log")"
fi
exit $failed
