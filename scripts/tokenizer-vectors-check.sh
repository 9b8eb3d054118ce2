#!/usr/bin/env bash
# Checks our byte-level BPE tokenizers against ids that Hugging Face's tokenizers produced: the
# vocabularies llama.cpp publishes with test vectors (models/ggml-vocab-{qwen2,llama-bpe,gpt-2}.gguf
# and their .gguf.inp / .gguf.out, written by llama.cpp's convert_hf_to_gguf_update.py from
# AutoTokenizer(...).encode(text, add_special_tokens=False); the .inp holds texts separated by a
# line "__ggml_vocab_test__", the .out one line of ids per text). Every text is encoded with
# `weightloader tokenize --no-bos` and compared with its ids, and the ids decoded back
# (`tokenize --ids`) must give the text again. Prints a table per vocabulary; exits 1 on any
# mismatch, 2 when nothing could be checked.
#   LLAMA_CPP_SOURCE: a llama.cpp source folder (github.com/ggerganov/llama.cpp, outside this
#     repository), or its git directory (the files are then read from HEAD); a vocabulary file that
#     is missing there (a snapshot without its large files) is reported and skipped.
#   NAME=TOKENIZER_JSON (optional, any number): a tokenizer.json to check against NAME's vectors as
#     well, e.g. llama-bpe=.../Meta-Llama-3-8B/tokenizer.json qwen2=.../Qwen2-7B/tokenizer.json.
# Usage: scripts/tokenizer-vectors-check.sh LLAMA_CPP_SOURCE [NAME=TOKENIZER_JSON ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
src=$(realpath "$1")
shift
[ -x build/weightloader ] || scripts/setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# models/F of the source folder or git directory, copied to $work/F; false when it is not there.
fetch() {
  if [ -d "$src/models" ]; then
    [ -s "$src/models/$1" ] && cp "$src/models/$1" "$work/$1"
  else
    git --git-dir="$src" show "HEAD:models/$1" >"$work/$1" 2>/dev/null && [ -s "$work/$1" ]
  fi
}

checks=()  # "label|tokenizer file|vectors name"
for name in qwen2 llama-bpe gpt-2 deepseek-llm deepseek-coder falcon starcoder refact; do
  fetch "ggml-vocab-$name.gguf.inp" && fetch "ggml-vocab-$name.gguf.out" || { echo "$name: no test vectors in $src" >&2; continue; }
  if fetch "ggml-vocab-$name.gguf"; then
    checks+=("ggml-vocab-$name.gguf|$work/ggml-vocab-$name.gguf|$name")
  else
    echo "$name: ggml-vocab-$name.gguf is not in $src (skipped)" >&2
  fi
done
for arg in "$@"; do
  name=${arg%%=*} file=${arg#*=}
  [ -f "$work/ggml-vocab-$name.gguf.inp" ] || { echo "$name: no test vectors for $file" >&2; exit 2; }
  checks+=("$file|$file|$name")
done
[ ${#checks[@]} -gt 0 ] || { echo "tokenizer-vectors-check: nothing to check" >&2; exit 2; }

WL=build/weightloader WORK="$work" build-deps/venv/bin/python - "${checks[@]}" <<'PY'
import os, subprocess, sys

wl, work = os.environ["WL"], os.environ["WORK"]
failed = False
print("| tokenizer | vectors | texts matched | decoded back |")
print("| --- | --- | --- | --- |")
for check in sys.argv[1:]:
    label, tokenizer, name = check.split("|")
    with open(f"{work}/ggml-vocab-{name}.gguf.inp", encoding="utf-8") as f:
        texts = f.read().split("\n__ggml_vocab_test__\n")[:-1]
    with open(f"{work}/ggml-vocab-{name}.gguf.out") as f:
        expected = [line.split() for line in f.read().split("\n")]
    matched = decoded = 0
    for text, want in zip(texts, expected):
        run = lambda *a: subprocess.run([wl, "tokenize", "--tokenizer", tokenizer, *a], capture_output=True, text=True)
        enc = run("--no-bos", *(["--text=" + text] if text else ["--text", ""]))  # CLI11 takes no empty "--text="
        got = enc.stdout.strip().split(",") if enc.returncode == 0 and enc.stdout.strip() else []
        if enc.returncode == 0 and got == want:
            matched += 1
        else:
            print(f"{label}: {text!r}: {' '.join(got) or enc.stderr.strip()} instead of {' '.join(want)}", file=sys.stderr)
        back = run("--ids", ",".join(got)).stdout[:-1] if got else ""
        if back == text:
            decoded += 1
        else:
            print(f"{label}: {text!r} decoded back as {back!r}", file=sys.stderr)
    n = len(texts)
    failed |= matched != n or decoded != n or n == 0
    print(f"| {label} | {name} | {matched} / {n} | {decoded} / {n} |")
sys.exit(1 if failed else 0)
PY
