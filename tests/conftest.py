"""Shared fixtures: the demo task's world and a backend that answers from a script."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.scripted_study import registry  # noqa: F401 (the scripted registry fixture, for every test)
from vcrime_audit.backends.base import GenerateRequest, GenerateResult, Usage
from vcrime_audit.models import get_model
from vcrime_audit.scenario import initial_world, load_task
from vcrime_audit.world import WorldState

DEMO_TASK = "robotics_company__data_theft"
# A three-room test map for the live plumbing tests (servers, pools, crashes, resumes): a real
# model's turn on it takes about 2 minutes here instead of about 6 on the demo map.
TINY_SCENARIOS = Path(__file__).resolve().parent / "data" / "tiny_scenarios"
TINY_TASK = "corner_shop__prank"
SHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "screenshots"
CHROMIUM = os.environ.get("VCRIME_CHROMIUM", "/usr/bin/chromium")

# No per-example time limit: an example that compresses a megabyte or replays a cassette can take
# longer than hypothesis's 200 ms on a loaded 2-core machine, and a test must not fail for it.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


@pytest.fixture(autouse=True)
def cycle_collector_left_on() -> Iterator[None]:
    """Fail a test that leaves the cycle collector off in the test process (a block of
    ``collector_off_while_runs_play`` never closed): later tests' objects in cycles, open stores
    among them, would then never be freed."""
    gc.enable()
    yield
    if not gc.isenabled():
        gc.enable()
        pytest.fail("the cycle collector was left off (gc.isenabled() is False after the test)")


@contextmanager
def tiny_scenarios_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VCRIME_SCENARIOS", str(TINY_SCENARIOS))
        yield


@pytest.fixture
def tiny_task() -> Iterator[str]:
    """The tiny test task's id, with ``$VCRIME_SCENARIOS`` pointing at its folder for the test
    (and the processes it starts)."""
    with tiny_scenarios_env():
        yield TINY_TASK


@pytest.fixture
def demo_world() -> WorldState:
    return initial_world(load_task(DEMO_TASK))


@pytest.fixture
def smollm():
    return get_model("smollm2-135m")


class ScriptedBackend:
    """Answers each request with ``answer(request)``: a stand-in for a model in unit tests of
    the code around the model (retries, cassettes), where a real model cannot be steered into
    the malformed outputs under test. Counts every call."""

    name = "scripted"

    def __init__(self, answer: Callable[[GenerateRequest], str | dict[str, Any]]) -> None:
        self.answer = answer
        self.calls: list[GenerateRequest] = []

    def fingerprint(self, model: str) -> dict[str, Any]:
        return {"engine": "scripted", "model": model}

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self.calls.append(request)
        out = self.answer(request)
        text = out if isinstance(out, str) else json.dumps(out)
        return GenerateResult(text=text, usage=Usage(prompt_tokens=10, completion_tokens=len(text)))

    async def aclose(self) -> None:
        pass


@pytest.fixture
def scripted():
    return ScriptedBackend


@pytest.fixture(scope="session")
def live_one_turn(tmp_path_factory):
    """One turn of the tiny task recorded with the embedded model, shared by the live tests
    that need a fresh recording of this machine (llama.cpp's answers depend on the build and
    the CPU, so only a recording made here can be reproduced live). Returns the outcome."""
    pytest.importorskip("llama_cpp", reason="a live recording needs the local backend")
    import asyncio

    from vcrime_audit.runner import RunConfig, run_episode

    work = tmp_path_factory.mktemp("live_one_turn")
    with tiny_scenarios_env():
        return asyncio.run(run_episode(RunConfig(task=TINY_TASK, max_turns=1), work / "live.sqlite",
                                       work / "cassettes"))


# Test files that share a worker because they use the session's live one-turn recording.
LIVE_ONE_TURN_FILES = frozenset({"tests/backends/test_local_live.py", "tests/test_resume_live.py",
                                 "tests/test_crash_resume.py"})
# The slowest groups (seconds of a real model each), started first so that the two workers
# finish together; the rest follow in collection order.
SLOW_FIRST = ("tests/test_readme_live.py", "live_one_turn", "tests/ecosystem/test_determinism.py",
              "tests/backends/test_openai.py", "tests/backends/test_pool.py",
              "tests/backends/test_transformers.py", "tests/test_readme.py", "tests/test_study_ray.py",
              "tests/certify/test_run_live.py", "tests/test_replay.py")


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its file, or the live one-turn group."""
    path = nodeid.split("::", 1)[0]
    return "live_one_turn" if path in LIVE_ONE_TURN_FILES else path


def pytest_collection_modifyitems(config, items):
    """Slowest groups first (with `-n 2 --no-loadscope-reorder` the workers take the groups in
    this order)."""
    rank = {group: i for i, group in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist hands out whole groups (see ``work_unit``), so a file's module fixtures (a
    server, a Ray cluster, a loaded model) start once and the live one-turn recording is made
    once. (xdist's own ``--dist loadgroup`` cannot read groups under pytest 9.2.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByGroup(config, log)


@pytest.fixture(scope="module")
def browser():
    """A real headless Chromium (Debian's package, driven by Playwright)."""
    if os.environ.get("VCRIME_SKIP_BROWSER") == "1":
        pytest.skip("VCRIME_SKIP_BROWSER=1")
    if not shutil.which(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}; fix: apt-get install -y chromium (scripts/install.sh "
                    "does it as root) or set VCRIME_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


MOUNT = ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs"]


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder on a file system that can be made read-only (tmpfs; needs the right to mount)."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    if subprocess.run([*MOUNT, str(folder)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield folder
    finally:  # lazily where a file is still open: no mount outlives the test
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def open_under(folder: Path) -> list[str]:
    """The files under ``folder`` that this process holds open."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{folder}/"):
            held.append(target)
    return sorted(held)


def remount(folder: Path, mode: str) -> None:
    done = subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, (done.stderr.strip(), "open here:", open_under(folder))
