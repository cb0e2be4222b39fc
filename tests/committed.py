"""The committed cassettes, each named exactly: a new recording can never be taken for one.

New recordings go to runs/ (ignored by git); re-recording one of these (DEVELOPERS.md) changes
its name only when its run's configuration changes, and then this file changes with it.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"
DEMO_RUN = CASSETTES / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"
CERTIFY = CASSETTES / "certify-secret_keeping-ar-s0-b6287f31.jsonl.gz"
FOLLOWUPS = {
    "rejudge": CASSETTES / "rejudge-35f69fce.jsonl.gz",
    "annotate": CASSETTES / "annotate-8cb30b34.jsonl.gz",
    "interrogate": CASSETTES / "interrogate-63dcecb7.jsonl.gz",
}
HARM_CHECK = CASSETTES / "harmcheck-2e387984.jsonl.gz"
HUMAN_DEMO = CASSETTES / "human-demo" / "robotics_company__data_theft-s0-40ffffb9.jsonl.gz"
STUDY_DEMO = CASSETTES / "study-demo"
STUDY_DEMO_RUNS = tuple(STUDY_DEMO / f"{name}.jsonl.gz" for name in (
    "robotics_company__data_theft-s0-4aa44143", "robotics_company__theft-s0-4aa44143"))
ALL = (DEMO_RUN, CERTIFY, *FOLLOWUPS.values(), HARM_CHECK, HUMAN_DEMO, *STUDY_DEMO_RUNS)
