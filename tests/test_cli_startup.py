"""The command line starts without heavy libraries, so replay and audit start fast."""

import subprocess
import sys

HEAVY = ("numpy", "scipy", "matplotlib", "torch", "llama_cpp", "transformers", "vllm", "outlines",
         "sentence_transformers", "httpx2")


def test_importing_the_cli_loads_no_heavy_library():
    code = ("import sys, vcrime_audit.cli\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
