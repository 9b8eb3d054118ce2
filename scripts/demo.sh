#!/usr/bin/env bash
# The main job on an embedded default: builds weightloader if needed, generates a small
# Llama-shaped checkpoint, inspects it and loads it (F32 → BF16), printing the load report.
# Usage: scripts/demo.sh [preset]   (tiny, small, 1gb, 2gb; default small)
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
