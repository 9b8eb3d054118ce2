#!/usr/bin/env bash
# The whole C++ suite under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/build-asan.sh
# builds it into build-asan/); any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-asan.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" "$@"
