#!/usr/bin/env bash
# One instrumented build for CI's sanitizer suite and its fuzzing: clang-14 with AddressSanitizer +
# UndefinedBehaviorSanitizer (and libFuzzer's coverage, -DWL_BUILD_FUZZ=ON) over the library, the CLI,
# the tests and the fuzz targets, into build-asan/. -O1 -gline-tables-only (libFuzzer's suggested
# flags): reports keep file:line and the whole build takes a fraction of an -O2 -g one on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null  # packages (clang-14 among them) and build/, whose CLI writes the fuzz seeds
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DWL_BUILD_FUZZ=ON -DWL_BUILD_BENCH=OFF -DWL_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
