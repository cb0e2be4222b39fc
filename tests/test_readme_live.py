"""Acceptance, with the embedded model: in a clean checkout, the README's first command (1 turn),
a live `certify --n 2` and a study leave `git status` empty, say what they wrote, say so when
they reuse a recording, and the committed-cassette script and tests still pass afterwards."""

from __future__ import annotations

import subprocess

import pytest

from tests.readme import blocks, fresh_checkout, has_git, run_step, shell_env

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(not has_git(), reason="needs git to check the checkout stays clean")]


def _ok(command: str, clone, env, timeout: int = 900) -> str:
    done = run_step(command, clone, env, timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{output[-3000:]}"
    return output


def _status(clone) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                          capture_output=True, text=True, check=True).stdout


def test_first_command_live_certify_and_study_leave_the_checkout_clean(tmp_path):
    clone = fresh_checkout(tmp_path / "clone")
    env = shell_env(clone, tmp_path / "bin")
    first = blocks()[0].steps[0].command.split("&&")[-1].strip()
    assert first == ".venv/bin/vcrime-audit run", first
    first = first.replace(".venv/bin/", "") + " --max-turns 1"

    run = _ok(first, clone, env)
    assert "1 turn(s)" in run and "0 replayed" in run and "cassette  runs/cassettes/" in run
    assert "next      vcrime-audit show " in run and "next      vcrime-audit replay runs/cassettes/" in run
    again = _ok(first, clone, env)
    assert "0 to the model" in again
    [reused] = [line for line in again.splitlines() if line.startswith("reused")]
    assert "no model was called" in reused and "vcrime-audit run --max-turns 1 --record-mode all" in reused

    certify = _ok("vcrime-audit certify --n 2", clone, env)
    assert "of 2 conversations" in certify and "cassette       runs/cassettes/certify-" in certify
    assert "Loading weights" not in certify, "a library's progress bar leaks into the output"
    assert "next      vcrime-audit certify --replay runs/cassettes/certify-" in certify

    (clone / "runs" / "one.yaml").write_text(
        "name: one\nattackers: [smollm2-135m]\njudge: smollm2-135m\nworld_manager: smollm2-135m\n"
        "tasks: [robotics_company__data_theft]\nseeds: [0]\nmax_turns: 1\nconcurrency: 1\n")
    study = _ok("vcrime-audit study runs/one.yaml", clone, env)
    assert "1 run(s) played" in study and "store runs/study.sqlite, cassettes runs/cassettes" in study
    assert "identical turn rows" in study, "the study's one run is the first command's: replayed"

    assert _status(clone) == ""
    _ok("VA=vcrime-audit bash scripts/demo_report.sh", clone, env)
    _ok(f"{env['PYTHON']} -m pytest -q -p no:cacheprovider -m 'not live' tests/test_replay.py "
        "tests/followups/test_committed.py tests/test_study.py tests/certify/test_replay.py", clone, env)
    assert _status(clone) == ""
