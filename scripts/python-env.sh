#!/usr/bin/env bash
# The Python environment every script, test and benchmark uses: build-deps/venv, Debian's python3
# with exactly the packages of python/requirements.lock (from PyPI). Remade only when the lock file
# changed since it was made (its sha256 is kept in the environment); pip's download cache makes a
# remake cheap on a machine that has installed the list once.
#   scripts/python-env.sh                    make or reuse the environment
#   scripts/python-env.sh --install-module   install weightloader (the module built in build/) into it
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build-deps/venv
lock=python/requirements.lock
want=$(sha256sum "$lock" | cut -d' ' -f1)

if [ "${1:-}" = "--install-module" ]; then
  # pip installs the package with the extension CMake built in build/ (setup.py copies it: no second
  # build), which also registers the vLLM plugin's entry point. Skipped while nothing changed.
  core=$(ls build/python/weightloader/_core*.so)
  stamp=$(cat "$core" setup.py pyproject.toml python/weightloader/*.py python/weightloader/*/*.py | sha256sum | cut -d' ' -f1)
  [ "$(cat "$venv/.module.sha256" 2>/dev/null)" = "$stamp" ] && exit 0
  echo "setup: installing weightloader into $venv" >&2
  WL_PREBUILT_CORE="$PWD/$core" "$venv/bin/pip" install -q --no-deps --no-build-isolation --no-index \
      --disable-pip-version-check . >&2
  echo "$stamp" > "$venv/.module.sha256"
  exit 0
fi

[ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$want" ] && exit 0
echo "setup: making $venv from $lock (PyPI; torch and vLLM are large, the first time takes minutes)" >&2
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
# --no-deps: the lock is complete, and one of its pins cannot go through pip's resolver (see the lock).
"$venv/bin/pip" install -q --disable-pip-version-check pip==26.3  # the pip the lock was made with
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$lock"
# The pinned safetensors' source release: its own test suite (bindings/python/tests) runs against
# weightloader's drop-in (tests/python/test_safetensors_reference_suite.py).
st=$(sed -n 's/^safetensors==//p' "$lock")
rm -rf build-deps/safetensors-suite && mkdir -p build-deps/safetensors-suite
"$venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: "safetensors==$st" \
    -d build-deps/safetensors-suite
tar xzf "build-deps/safetensors-suite/safetensors-$st.tar.gz" -C build-deps/safetensors-suite \
    "safetensors-$st/bindings/python/tests"
echo "$want" > "$venv/.requirements.sha256"
