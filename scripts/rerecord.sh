#!/usr/bin/env bash
# Re-record every committed cassette that the embedded model (SmolLM2-135M, CPU) answers, in the
# order they depend on each other: the demo run, the demo study, the follow-ups and the harm
# check over the demo store, the browser game. Then: update tests/committed.py (and the names
# in scripts/demo_report.sh, README.md and DEVELOPERS.md) if a name changed, run
# `pytest tests/agents --snapshot-update`, and review the diff. The certification cassette and
# the vLLM one have their own commands (DEVELOPERS.md). About half an hour on an idle 2-core CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
VA=${VA:-.venv/bin/vcrime-audit}
PY=${PY:-.venv/bin/python}
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "demo run"
$VA run --max-turns 3 --cassette-dir cassettes --record-mode all
step "demo study"
rm -rf cassettes/study-demo runs/study-demo.sqlite
$VA study studies/demo.yaml --cassette-dir cassettes/study-demo
step "follow-ups"
$PY -m tests.followups.record
step "harm check"
rm -f cassettes/harmcheck-*.jsonl.gz runs/demo.sqlite
$VA replay cassettes/robotics_company__data_theft-s0-e3005c10.jsonl.gz --db runs/demo.sqlite
$VA audit harm-check --db runs/demo.sqlite --labeller smollm2-135m --per-attacker 3 --cassette-dir cassettes
step "browser game"
$PY -m tests.web.record
step "done"
git status --short cassettes
