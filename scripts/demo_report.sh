#!/usr/bin/env bash
# Rebuild audit_reports/demo from the committed cassettes alone: no model is called.
set -euo pipefail
cd "$(dirname "$0")/.."
VA=${VA:-.venv/bin/vcrime-audit}
db=runs/demo.sqlite
rm -f "$db"
$VA replay cassettes/robotics_company__data_theft-s0-*.jsonl.gz --db "$db"
$VA rejudge --db "$db" --replay cassettes/rejudge-*.jsonl.gz
$VA annotate --db "$db" --replay cassettes/annotate-*.jsonl.gz
$VA interrogate --db "$db" --replay cassettes/interrogate-*.jsonl.gz
$VA certify --db "$db" --replay cassettes/certify-*.jsonl.gz
$VA audit --db "$db" --out audit_reports/demo
$VA audit harm-check --db "$db" --replay cassettes/harmcheck-*.jsonl.gz \
    --out audit_reports/demo/harm-check
