#!/usr/bin/env bash
# Rebuild audit_reports/demo from the committed cassettes alone: no model is called.
# The cassettes are named exactly (tests/committed.py lists the same files), so a new
# recording can never be picked up by mistake.
set -euo pipefail
cd "$(dirname "$0")/.."
VA=${VA:-.venv/bin/vcrime-audit}
db=runs/demo.sqlite
rm -f "$db"
$VA replay cassettes/robotics_company__data_theft-s0-e3005c10.jsonl.gz --db "$db"
$VA rejudge --db "$db" --replay cassettes/rejudge-35f69fce.jsonl.gz
$VA annotate --db "$db" --replay cassettes/annotate-8cb30b34.jsonl.gz
$VA interrogate --db "$db" --replay cassettes/interrogate-63dcecb7.jsonl.gz
$VA certify --db "$db" --replay cassettes/certify-secret_keeping-ar-s0-b6287f31.jsonl.gz
$VA audit --db "$db" --out audit_reports/demo
$VA audit harm-check --db "$db" --replay cassettes/harmcheck-2e387984.jsonl.gz \
    --out audit_reports/demo/harm-check
