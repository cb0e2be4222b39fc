"""The command line starts without heavy libraries, so replay and audit start fast."""

import subprocess
import sys

HEAVY = ("numpy", "scipy", "torch", "llama_cpp", "transformers", "vllm", "outlines",
         "sentence_transformers", "httpx2")


def test_importing_the_cli_loads_no_heavy_library():
    code = ("import sys, vcrime_audit.cli\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


READ_ONLY_NEEDS_NONE_OF = ("asyncio", "jinja2", "vcrime_audit.agents", "vcrime_audit.store.rows",
                           "vcrime_audit.store.writer", "vcrime_audit.followups.annotate")
"""What only recording and replaying need: the event loop, prompt templates, the roles' models, the
store's row making and writer thread (~0.3 s of the audit's start, before it reads a row)."""


def test_the_audit_command_imports_nothing_that_only_writing_needs():
    code = ("import sys, vcrime_audit.cli\n"
            "from vcrime_audit.audit.pipeline import run_audit\n"
            "from vcrime_audit.audit.report import write_report\n"
            f"print(','.join(m for m in {READ_ONLY_NEEDS_NONE_OF!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


SECTIONS_NEED_NONE_OF = ("vcrime_audit.cassette", "vcrime_audit.determinism", "vcrime_audit.certify.bounds",
                         "vcrime_audit.certify.distributions", "vcrime_audit.certify.graph",
                         "vcrime_audit.certify.embedders")
"""What the audit's sections from other workflows (certifications, determinism checks) do not
read: the cassette and backend code that sends recorded calls again, and certify's building
blocks (~27 ms of the audit's start)."""


def test_the_audit_reads_other_workflows_sections_without_their_code(tmp_path):
    from vcrime_audit.store import Store

    db = tmp_path / "store.sqlite"
    Store(db).close()
    code = ("import sys\nfrom pathlib import Path\n"
            "from vcrime_audit.audit.other_sections import other_sections\n"
            f"assert other_sections(Path({str(db)!r}))\n"
            f"print(','.join(m for m in {SECTIONS_NEED_NONE_OF!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
