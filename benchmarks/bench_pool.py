"""Wall time and calls/s of a small study served by a pool of one, then two, llama.cpp servers.

    python benchmarks/bench_pool.py [--runs 2] [--turns 1] [--concurrency 2]

Each pool size records the same study afresh (the embedded SmolLM2-135M GGUF behind
``python -m llama_cpp.server`` on 127.0.0.1, one thread per server by llama.cpp's default on a
2-CPU machine) through a pool entry (``options.base_urls``). Definitions: wall time = seconds
from the study's start to its end (servers already up and loaded); calls/s = model calls
answered (the cassettes' call records) / wall time. Prints the load average before and after:
the machine may be shared, which the figures then include.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POOL = "smollm2-135m-pool"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def measure(servers: int, runs: int, turns: int, concurrency: int, work: Path) -> tuple[float, int]:
    from tests.backends.server import llama_server
    from tests.backends.test_pool import PROJECT_MODELS, write_pool_entry
    from vcrime_audit.cassette import Cassette, RecordMode
    from vcrime_audit.models import get_model
    from vcrime_audit.study import StudyConfig, run_study

    weights = get_model("smollm2-135m", PROJECT_MODELS).weights_path()
    alias = get_model("smollm2-135m-server", PROJECT_MODELS).weights.served_name
    with ExitStack() as stack:
        urls = [stack.enter_context(llama_server(weights, alias, work / f"server{i}.log",
                                                 n_ctx=4096)).base_url for i in range(servers)]
        os.environ["VCRIME_MODELS"] = str(write_pool_entry(work / "models", urls))
        spec = StudyConfig(name="bench-pool", attackers=[POOL], judge=POOL, world_manager=POOL,
                           backend="openai", tasks=["robotics_company__data_theft"],
                           seeds=list(range(runs)), max_turns=turns, concurrency=concurrency,
                           db=work / "study.sqlite", cassette_dir=work / "cassettes")
        started = time.perf_counter()
        result = asyncio.run(run_study(spec))
        seconds = time.perf_counter() - started
    if result.crashed:
        raise SystemExit(f"runs crashed: {result.crashed}")
    calls = sum(len(Cassette(p, RecordMode.none).calls) for p in spec.cassette_dir.glob("*.jsonl.gz"))
    return seconds, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--turns", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2], help="Pool sizes to measure.")
    args = parser.parse_args()
    os.environ.pop("VCRIME_OPENAI_BASE_URL", None)
    print(f"{args.runs} run(s) x {args.turns} turn(s), concurrency {args.concurrency}; {load_average()}",
          flush=True)
    for servers in args.servers:
        with tempfile.TemporaryDirectory(prefix="vcrime-bench-pool-") as tmp:
            seconds, calls = measure(servers, args.runs, args.turns, args.concurrency, Path(tmp))
        print(f"{servers} server(s): wall {seconds:.1f} s, {calls} calls, {calls / seconds:.3f} calls/s; "
              f"{load_average()}", flush=True)


if __name__ == "__main__":
    main()
