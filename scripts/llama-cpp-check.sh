#!/usr/bin/env bash
# Checks our GGUF output with llama.cpp itself: builds llama.cpp from a source folder you give
# (github.com/ggerganov/llama.cpp, outside this repository; nothing is downloaded), converts the
# stories260K reference model to GGUF F32, F16 and Q8_0 with the tokenizer found beside it and to
# F32 without one, and runs each conversion there:
#   - F32 with its tokenizer: llama-simple's greedy text from BOS must be run.c's, byte for byte;
#   - F16 and Q8_0: llama-simple loads them and generates;
#   - F32 without a tokenizer (tokenizer.ggml.model "none"): llama.cpp's loader reads it and the
#     logits after ids 1,403,407,261 equal run.c's at position 3 within 1e-4;
#   - Q4_0, Q4_1, Q5_0 and Q5_1 (quantised as gguf-py quantises) without a tokenizer, and TQ1_0 and
#     TQ2_0 of a tiny Granite 256 wide (stories260K's rows are 64 wide, under a TQ block): llama.cpp's
#     logits after the same ids equal our engine's on the same file within 5e-2 of the row's scale
#     (llama.cpp's dot products round the activations to 8 bits; a block read wrongly is off by far more);
#   - the tiny models of testdata/hf-tiny-arch as GGUF F32 (Qwen2, Mixtral also with its experts
#     stacked as transformers 5 writes them, Gemma, Phi-3; Mixtral renamed as a Qwen2-MoE with a
#     shared expert, against our engine; Mistral
#     without its window, which our converter refuses): llama.cpp's logits after the first sequence
#     (Mistral: its first 4 ids) equal transformers' within 1e-4 of the row's scale; Gemma 2, whose
#     query_pre_attn_scalar our converter refuses and which llama.cpp runs only at 26, 42 or 46
#     layers, repeated to 26 layers against our engine;
#   - every block type ggml quantises (its ggml_quantize_chunk, what llama-quantize runs), on the same
#     F32 rows: our reading of the blocks equals ggml's own dequantisation and gguf-py's, bit for bit;
#   - tiny random OLMo 2, Granite, Granite-MoE, DeepSeek-V2 (with q_a/q_b, with q_proj alone at 27
#     layers, and with yarn) and DeepSeek-V3 (one expert group) models the pinned transformers builds (as many kv heads as heads), as GGUF F32:
#     llama.cpp's logits equal our engine's (which equals transformers' on them:
#     tests/python/test_families_gguf.py);
#   - where the source knows them (a row marked skip otherwise): tiny gpt-oss, Llama 4 text and
#     Granite-MoE-Shared, as the same tiny OLMo 2 and the others above; and a tiny gpt-oss whose
#     experts are MXFP4 as released, its experts written GGUF MXFP4 (the rest F32), against our
#     engine on the same file within 5e-2.
# Sources newer than c392e509 (flash_attn_type in llama.h) run with flash attention off: on the CPU it
# rounds the queries to F16. ggml types the pinned gguf-py cannot dequantise (Q1_0) are compared with
# ggml's own values alone.
# Usage: scripts/llama-cpp-check.sh LLAMA_CPP_SOURCE [BUILD_DIR]   (BUILD_DIR default: /tmp/llama.cpp-build)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,34p' "$0" >&2; exit 2; }
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
g++ -std=c++17 -O1 scripts/ggml_quantize_blocks.cpp -I"$src/ggml/include" -L"$bin" -lggml-base -lggml -Wl,-rpath,"$bin" \
  -o "$build/wl_ggml_quantize_blocks"
fa_type=$(grep -q flash_attn_type "$src/include/llama.h" && echo -DWL_LLAMA_FLASH_ATTN_TYPE || true)
g++ -std=c++17 -O1 $fa_type scripts/llama_cpp_logits.cpp -I"$src/include" -I"$src/ggml/include" -L"$bin" -lllama -lggml \
  -lggml-base -Wl,-rpath,"$bin" -o "$build/wl_llama_cpp_logits"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for type in f32 f16 q8_0; do
  build/weightloader convert "$data/stories260K.bin" "$work/s-$type.gguf" --gguf-type "$type" -q >/dev/null
done
build/weightloader convert "$data/stories260K.bin" "$work/s-none.gguf" --gguf-type f32 --no-tokenizer -q >/dev/null

failed=0
report() { printf '| %-38s | %-4s | %s |\n' "$1" "$2" "$3"; [ "$2" = ok ] || [ "$2" = skip ] || failed=1; }
echo "| our conversion | llama.cpp | what it did |"
echo "| --- | --- | --- |"
# llama-simple prints the prompt's BOS as "<s> " before the text run.c prints; 200 positions as run.c's -n 200.
if "$bin/llama-simple" -m "$work/s-f32.gguf" -n 200 "" 2>"$work/f32.log" | sed '1s/^<s> //' >"$work/f32.txt" &&
   cmp -s "$work/f32.txt" "$data/expected_greedy_t0_n200.txt"; then
  report "stories260K F32, tokenizer embedded" ok "greedy text from BOS = run.c's, byte for byte ($(wc -c <"$work/f32.txt") bytes)"
else
  report "stories260K F32, tokenizer embedded" FAIL "text differs from run.c's (see below)"; tail -5 "$work/f32.log" >&2; head -c 300 "$work/f32.txt" >&2
fi
for type in f16 q8_0; do
  if "$bin/llama-simple" -m "$work/s-$type.gguf" -n 40 "" >"$work/$type.txt" 2>"$work/$type.log" && [ -s "$work/$type.txt" ]; then
    report "stories260K ${type^^}, tokenizer embedded" ok "loads and generates: $(head -c 60 "$work/$type.txt" | tr '\n' ' ')..."
  else
    report "stories260K ${type^^}, tokenizer embedded" FAIL "$(grep -m1 -i error "$work/$type.log" || tail -1 "$work/$type.log")"
  fi
done
awk '/^pos 3 /{on=1; next} /^pos /{on=0} on' "$data/expected_logits_first4.txt" >"$work/runc-pos3.txt"
if "$build/wl_llama_cpp_logits" "$work/s-none.gguf" 1 403 407 261 >"$work/none-logits.txt" 2>"$work/none.log"; then
  worst=$(paste "$work/none-logits.txt" "$work/runc-pos3.txt" | awk '{d=$1-$2; if (d<0) d=-d; if (d>m) m=d} END {printf "%.2g", m+0}')
  rows=$(wc -l <"$work/none-logits.txt")
  if [ "$rows" = "$(wc -l <"$work/runc-pos3.txt")" ] && awk -v w="$worst" 'BEGIN {exit !(w <= 1e-4)}'; then
    report "stories260K F32, no tokenizer" ok "loads; logits at position 3 = run.c's within $worst ($rows values)"
  else
    report "stories260K F32, no tokenizer" FAIL "logits differ from run.c's by $worst ($rows values)"
  fi
else
  report "stories260K F32, no tokenizer" FAIL "$(grep -m1 -i error "$work/none.log" || tail -1 "$work/none.log")"
fi
# The tiny models of testdata/hf-tiny-arch: llama.cpp's logits at the last of the ids equal the
# reference's within 1e-4 of the row's scale (its largest |logit|, at least 1).
arch=../shared/testdata/hf-tiny-arch
inputs() { build-deps/venv/bin/python scripts/llama_cpp_check_inputs.py "$@"; }
# logits_row LABEL GGUF REFERENCE_FILE WHAT ID...: WHAT says what the ids and the reference are;
# within $tolerance (default 1e-4) of the row's scale.
logits_row() {
  local label=$1 gguf=$2 ref=$3 what=$4 worst tol=${tolerance:-1e-4}
  shift 4
  if ! "$build/wl_llama_cpp_logits" "$gguf" "$@" >"$gguf.logits" 2>"$gguf.log"; then
    report "$label" FAIL "$(grep -m1 -i 'error\|fatal' "$gguf.log" || tail -1 "$gguf.log")"; return
  fi
  worst=$(paste "$gguf.logits" "$ref" |
    awk '{d=$1-$2; if (d<0) d=-d; if (d>m) m=d; a=$2<0?-$2:$2; if (a>s) s=a} END {if (s<1) s=1; printf "%.2g", m/s}')
  if [ "$(wc -l <"$gguf.logits")" = "$(wc -l <"$ref")" ] && awk -v w="$worst" -v t="$tol" 'BEGIN {exit !(w <= t)}'; then
    report "$label" ok "$what within $worst of the row's scale"
  else
    report "$label" FAIL "$what: differ by $worst of the row's scale"
  fi
}
# family_row FAMILY LABEL WHAT [MODEL_DIR [N]]: MODEL_DIR (default the family's own) converted to
# GGUF F32 without a tokenizer, run on the first N ids (default 16) of the family's first sequence.
family_row() {
  local family=$1 label=$2 what=$3 model=${4:-$arch/$1} n=${5:-16}
  local ref="$arch/$family/reference_logits.json" gguf="$work/$family.gguf"
  if ! build/weightloader convert "$model" "$gguf" --gguf-type f32 -q >/dev/null 2>"$work/$family-convert.log"; then
    report "$label" FAIL "$(cat "$work/$family-convert.log")"; return
  fi
  inputs logits "$ref" "$n" >"$work/$family-ref.txt"
  read -ra ids < <(inputs ids "$ref" "$n")
  logits_row "$label" "$gguf" "$work/$family-ref.txt" "$what; logits at position $((n - 1)) = transformers'" "${ids[@]}"
}
# refused FAMILY FIELD: our converter refuses the family's own model, naming FIELD.
refused() {
  ! build/weightloader convert "$arch/$1" "$work/refused.gguf" -q >/dev/null 2>"$work/refused.log" && grep -q "$2" "$work/refused.log"
}
for type in q4_0 q4_1 q5_0 q5_1; do
  build/weightloader convert "$data/stories260K.bin" "$work/s-$type-none.gguf" --gguf-type "$type" --no-tokenizer -q >/dev/null
  PYTHONPATH=build/python inputs engine "$work/s-$type-none.gguf" 1 403 407 261 >"$work/s-$type-ref.txt"
  tolerance=5e-2 logits_row "stories260K ${type^^}, no tokenizer" "$work/s-$type-none.gguf" "$work/s-$type-ref.txt" \
    "loads; logits at position 3 = our engine's on the same file" 1 403 407 261
done
family_row qwen2 "tiny Qwen2, F32, no tokenizer" "architecture qwen2 loads"
family_row mixtral "tiny Mixtral, F32, no tokenizer" "architecture llama, 4 experts in ffn_*_exps stacks, top-2"
PYTHONPATH=build/python inputs restack "$arch/mixtral" "$work/mixtral-t5"
family_row mixtral "tiny Mixtral stacked as transformers 5" "read as per-expert tensors, written as ffn_*_exps stacks" "$work/mixtral-t5"
# Qwen2-MoE: Mixtral's tiny model renamed, its top-k weights not renormalised (llama.cpp's qwen2moe
# never does) and a random shared expert; against our engine's logits for it (no reference exists).
PYTHONPATH=build/python inputs qwen2moe "$arch/mixtral" "$work/qwen2moe"
read -ra ids < <(inputs ids "$arch/mixtral/reference_logits.json" 16)
build/weightloader convert "$work/qwen2moe" "$work/qwen2moe.gguf" --gguf-type f32 -q >/dev/null
PYTHONPATH=build/python inputs engine "$work/qwen2moe" "${ids[@]}" >"$work/qwen2moe-ref.txt"
logits_row "tiny Qwen2-MoE, F32, no tokenizer" "$work/qwen2moe.gguf" "$work/qwen2moe-ref.txt" \
  "architecture qwen2moe, ffn_*_exps stacks, shared expert and its gate; logits at position 15 = our engine's" "${ids[@]}"
family_row gemma "tiny Gemma, F32, no tokenizer" "architecture gemma, norms stored as 1 + w, head tied, head_dim 6"
# Later llama.cpp runs Phi-3 without its window ("Phi SWA is currently disabled"): there the first 4
# ids, which a window of 4 does not mask, are compared.
if grep -q "Phi SWA is currently disabled" "$src/src/llama-model.cpp"; then
  family_row phi3 "tiny Phi-3, F32, no tokenizer" "architecture phi3, attn_qkv and ffn_up fused, rotary 6 of 8, window 4 (this llama.cpp ignores it)" \
    "$arch/phi3" 4
else
  family_row phi3 "tiny Phi-3, F32, no tokenizer" "architecture phi3, attn_qkv and ffn_up fused, rotary 6 of 8, window 4"
fi
# Mistral's window (4, shorter than the 16 ids) is not something llama.cpp's llama can run: our
# converter refuses it; without it, the first 4 ids (which a window of 4 does not mask) are compared.
if refused mistral "sliding_window none instead of 4"; then
  inputs edit "$arch/mistral" "$work/mistral-nowindow" sliding_window=null
  family_row mistral "tiny Mistral, F32, no tokenizer" "window 4 refused by name; without it, architecture llama" \
    "$work/mistral-nowindow" 4
else
  report "tiny Mistral, F32, no tokenizer" FAIL "the sliding window was not refused: $(cat "$work/refused.log")"
fi
# llama.cpp scales Gemma 2's queries by 1/sqrt(head_dim) (not its query_pre_attn_scalar, 12 in the
# tiny model, which our converter therefore refuses) and aborts on a Gemma 2 that is not 26, 42 or
# 46 layers: its row runs the tiny model's layers repeated to 26 with query_pre_attn_scalar = head_dim,
# against our engine's logits for that model (the engine equals transformers' on the tiny one).
label="tiny Gemma 2 x13 (26 layers), F32"
if refused gemma2 "query_pre_attn_scalar 6 instead of 12"; then
  inputs edit "$arch/gemma2" "$work/gemma2-scaled" query_pre_attn_scalar=6
  inputs repeat "$work/gemma2-scaled" "$work/gemma2-26" 26
  read -ra ids < <(inputs ids "$arch/gemma2/reference_logits.json" 16)
  build/weightloader convert "$work/gemma2-26" "$work/gemma2-26.gguf" --gguf-type f32 -q >/dev/null
  PYTHONPATH=build/python inputs engine "$work/gemma2-26" "${ids[@]}" >"$work/gemma2-26-ref.txt"
  logits_row "$label" "$work/gemma2-26.gguf" "$work/gemma2-26-ref.txt" \
    "query_pre_attn_scalar 12 refused by name; architecture gemma2, four norms, soft-caps, windows on even layers; logits at position 15 = our engine's" \
    "${ids[@]}"
else
  report "$label" FAIL "query_pre_attn_scalar was not refused: $(cat "$work/refused.log")"
fi
mkdir "$work/blocks"
if "$build/wl_ggml_quantize_blocks" "$work/blocks" >"$work/blocks.types" &&
   PYTHONPATH=build/python inputs blocks "$work/blocks" >"$work/blocks.txt"; then
  report "ggml's quantisation, every type" ok "$(wc -l <"$work/blocks.txt") types read = ggml's and gguf-py's values, bit for bit: $(cut -d' ' -f1 "$work/blocks.txt" | tr '\n' ' ')"
else
  report "ggml's quantisation, every type" FAIL "$(grep -v ' ok$' "$work/blocks.txt" | tr '\n' ';')"
fi
# OLMo 2 (post-norms, whole-projection q/k norms), Granite (its four scales, interleaved q/k rows),
# Granite-MoE (its experts stacked) and DeepSeek-V2 (latent attention, shared experts, a dense first
# layer; q_a/q_b, and q_proj alone at 27 layers as that llama.cpp requires). llama.cpp sizes OLMo 2's
# k_norm [n_embd] (as many kv heads as heads, as in the models of its time).
# DeepSeek-V3 (sigmoid scores, the choosing bias as exp_probs_b) in one expert group where the
# llama.cpp predates grouped choice (c392e509).
# Then architectures newer than some sources (a row marked skip where the source lacks them): gpt-oss
# (sinks, biased experts split from transformers 5's interleaved stacks, yarn scaling cos and sin),
# Llama 4 (chunked and rope-less layers, the shared expert, the experts split from their stacks) and
# Granite-MoE-Shared (granitemoe with ffn_*_shexp, in sources whose granitemoe reads them).
lacks() {
  case $1 in
    gpt_oss) ! grep -q '"gpt-oss"' "$src/src/llama-arch.cpp" ;;
    llama4_text) ! grep -q '"llama4"' "$src/src/llama-arch.cpp" ;;
    granitemoeshared) ! awk '/case LLM_ARCH_GRANITE_MOE:/ {on = 1} on && /shexp/ {found = 1} on && /break;/ {on = 0}
                             END {exit !found}' "$src/src/llama-model.cpp" ;;
    *) false ;;
  esac
}
for family in olmo2 granite granitemoe deepseek_v2 "deepseek_v2 lite" "deepseek_v2 yarn" deepseek_v3 gpt_oss llama4_text \
              granitemoeshared; do
  if lacks "$family"; then report "tiny ${family^} (transformers'), F32" skip "this llama.cpp source does not have it"; continue; fi
  sizes=(num_key_value_heads=4)
  [[ $family == deepseek* ]] && sizes=()  # latent attention: every head reads the same latents
  # Grouped choice (2 of 4 groups) where the source reads expert_group_count, else one group.
  [[ $family == deepseek_v3 ]] && ! grep -q expert_group_count "$src/src/llama-arch.cpp" && sizes=(n_group=1 topk_group=1)
  inputs tiny "$family" "$work/$family-tiny" "${sizes[@]}" 2>/dev/null
  build/weightloader convert "$work/$family-tiny" "$work/$family-tiny.gguf" --gguf-type f32 --no-tokenizer -q >/dev/null
  PYTHONPATH=build/python inputs engine "$work/$family-tiny" 5 17 33 61 8 >"$work/$family-tiny-ref.txt"
  logits_row "tiny ${family^} (transformers'), F32" "$work/$family-tiny.gguf" "$work/$family-tiny-ref.txt" \
    "$family as GGUF; logits at position 4 = our engine's" 5 17 33 61 8
done
# gpt-oss as released: its experts MXFP4 (_blocks and _scales), written as convert does by default
# (and llama.cpp's converter): ffn_*_exps GGUF MXFP4 from the checkpoint's blocks, the other
# matrices F16, biases and routers F32. llama.cpp's MXFP4 products round the activations to Q8_0:
# within 5e-2.
if lacks gpt_oss; then
  report "tiny Gpt_oss, MXFP4 experts" skip "this llama.cpp source does not have it"
else
  inputs tiny gpt_oss "$work/gpt_oss-mxfp4" num_key_value_heads=4 mxfp4=true 2>/dev/null
  build/weightloader convert "$work/gpt_oss-mxfp4" "$work/gpt_oss-mxfp4.gguf" --no-tokenizer -q >/dev/null
  PYTHONPATH=build/python inputs engine "$work/gpt_oss-mxfp4.gguf" 5 17 33 61 8 >"$work/gpt_oss-mxfp4-ref.txt"
  tolerance=5e-2 logits_row "tiny Gpt_oss, MXFP4 experts" "$work/gpt_oss-mxfp4.gguf" "$work/gpt_oss-mxfp4-ref.txt" \
    "ffn_*_exps MXFP4 from the checkpoint's blocks; logits at position 4 = our engine's on the same file" 5 17 33 61 8
fi
# TQ1_0 and TQ2_0 (blocks of 256): a tiny Granite 256 wide, ternary-quantised as gguf-py does.
inputs tiny granite "$work/granite-256" hidden_size=256 intermediate_size=512 num_key_value_heads=4 2>/dev/null
for type in tq1_0 tq2_0; do
  build/weightloader convert "$work/granite-256" "$work/granite-$type.gguf" --gguf-type "$type" --no-tokenizer -q >/dev/null
  PYTHONPATH=build/python inputs engine "$work/granite-$type.gguf" 5 17 33 61 8 >"$work/granite-$type-ref.txt"
  tolerance=5e-2 logits_row "tiny Granite 256 wide, ${type^^}" "$work/granite-$type.gguf" "$work/granite-$type-ref.txt" \
    "loads; logits at position 4 = our engine's on the same file" 5 17 33 61 8
done
exit $failed
