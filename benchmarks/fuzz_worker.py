"""A parent process for benchmarks/fuzz_inputs.py: imports the CLI once, then runs each
command it is given in its own forked child process, killed after ``cap`` seconds of CPU time
(RLIMIT_CPU) or ``wall`` seconds of wall-clock time (a wait that uses no CPU).

Protocol: one JSON object per line on stdin ({"args": [...], "cwd": "...", "cap": 60,
"wall": 600}); one per
line on stdout ({"rc": int | null, "out": str, "err": str}). A child's uncaught exception is
printed as Python prints it ("Traceback (most recent call last): ...") and ends it with code 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback


def _child(args: list[str], cwd: str, out_path: str, err_path: str, cap: float) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (int(cap), int(cap) + 1))
    out = os.open(out_path, os.O_WRONLY)
    err = os.open(err_path, os.O_WRONLY)
    os.dup2(out, 1)
    os.dup2(err, 2)
    code = 1
    try:
        os.chdir(cwd)
        from vcrime_audit.cli import app

        app(args, prog_name="vcrime-audit")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # what Python would print for an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(args: list[str], cwd: str, cap: float, wall: float) -> dict:
    with tempfile.NamedTemporaryFile(delete=False) as o, tempfile.NamedTemporaryFile(delete=False) as e:
        out_path, err_path = o.name, e.name
    pid = os.fork()
    if pid == 0:
        _child(args, cwd, out_path, err_path, cap)
    deadline = time.monotonic() + wall
    rc: int | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            rc = None if rc in (-signal.SIGXCPU, -signal.SIGKILL) else rc
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    texts = []
    for path in (out_path, err_path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read()[-20000:])
        os.unlink(path)
    return {"rc": rc, "out": texts[0], "err": texts[1]}


def main() -> None:
    import importlib

    for module in ("vcrime_audit.cli", "vcrime_audit.runner", "vcrime_audit.study",
                   "vcrime_audit.merge", "vcrime_audit.transcript", "vcrime_audit.audit.pipeline",
                   "vcrime_audit.audit.report", "vcrime_audit.scenario_checks"):
        importlib.import_module(module)  # imported once, shared by every forked child
    for line in sys.stdin:
        case = json.loads(line)
        answer = run(case["args"], case["cwd"], case.get("cap", 60), case.get("wall", 600))
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
