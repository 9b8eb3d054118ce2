#!/usr/bin/env bash
# The main job on an embedded default: builds weightloader if needed, generates a small
# Llama-shaped checkpoint, inspects it and loads it (F32 → BF16), printing the load report, then
# generates text from llama2.c's stories260K model (when ../shared/testdata is there).
# Usage: scripts/demo.sh [preset]   (tiny, small, 100m, 1gb, 2gb; default small)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
preset="${1:-small}"
out="$(mktemp -d "${TMPDIR:-/tmp}/weightloader-demo.XXXXXX")"
trap 'rm -rf "$out" "$out.inspect"' EXIT
wl=build/weightloader
echo "== weightloader synth $out --preset $preset"
$wl synth "$out" --preset "$preset"
echo "== weightloader inspect (first lines)"
$wl inspect "$out" > "$out.inspect"
head -n 12 "$out.inspect"; echo "..."; grep " tensors, " "$out.inspect"
echo "== weightloader loaders"
$wl loaders
echo "== weightloader load --dtype bf16"
$wl load "$out" --loader local --dtype bf16
stories=../shared/testdata/llama2c-stories260K
if [ -f "$stories/stories260K.bin" ]; then
  echo "== weightloader generate: llama2.c's stories260K, greedy, 2 tensor-parallel ranks"
  $wl generate --model "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" -t 0 -n 120 --tp 2
fi
