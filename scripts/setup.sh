#!/usr/bin/env bash
# Installs the Debian packages weightloader needs (only those missing), makes the Python environment
# build-deps/venv from python/requirements.lock (reused while it matches), builds everything into
# build/ and installs the module into that environment.
# Usage: scripts/setup.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build pkg-config git
          libhwy-dev libopenblas-dev nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          libsentencepiece-dev libicu-dev libcurl4-openssl-dev libssl-dev nginx  # nginx: the remote tests serve files with it
          liburing-dev  # io=uring: O_DIRECT reads kept in flight on an io_uring
          openmpi-bin libopenmpi-dev  # MPI tensor parallelism (weightloader_mpi) and its tests
          python3 python3-dev pybind11-dev python3-venv  # the Python module (its PyPI packages: below)
          clang-14 libclang-rt-14-dev)  # clang: scripts/build-asan.sh (sanitizers, fuzzing)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for s3rver (below), unless some npm is there already (NodeSource's nodejs
# bundles its own, which Debian's npm package would conflict with).
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# s3rver 3.7.1 (npm, test-only): the remote tests' second S3 server, beside moto. Into
# build-deps/ (ignored by git), once.
if [ ! -x build-deps/s3rver/node_modules/.bin/s3rver ]; then
  echo "setup: installing s3rver 3.7.1 (npm) into build-deps/s3rver" >&2
  mkdir -p build-deps/s3rver
  npm install --prefix build-deps/s3rver --no-audit --no-fund --loglevel=error s3rver@3.7.1 >/dev/null
fi

scripts/python-env.sh

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
scripts/python-env.sh --install-module
