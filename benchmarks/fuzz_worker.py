"""A parent process for benchmarks/fuzz_inputs.py: imports the CLI once, then runs each
command it is given in its own forked child process (60 s cap, killed on time-out).

Protocol: one JSON object per line on stdin ({"args": [...], "cwd": "...", "cap": 60}); one per
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


def _child(args: list[str], cwd: str, out_path: str, err_path: str) -> None:
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


def run(args: list[str], cwd: str, cap: float) -> dict:
    with tempfile.NamedTemporaryFile(delete=False) as o, tempfile.NamedTemporaryFile(delete=False) as e:
        out_path, err_path = o.name, e.name
    pid = os.fork()
    if pid == 0:
        _child(args, cwd, out_path, err_path)
    deadline = time.monotonic() + cap
    rc: int | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
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
    import vcrime_audit.cli  # noqa: F401 - imported once, shared by every forked child

    for line in sys.stdin:
        case = json.loads(line)
        print(json.dumps(run(case["args"], case["cwd"], case.get("cap", 60))), flush=True)


if __name__ == "__main__":
    main()
