"""What the shared-cluster security costs: a MUNGE login, and a job verb run as its owner.

What is measured
    * ``login``: one MUNGE proof as ``det user login`` makes it — the ``munge`` binary
      encoding a ``hpcdet-login <url>`` payload as user_a, then ``unmunge`` decoding it as
      the master (:mod:`hpcdet.munge`) — K times; median and spread. It happens once per
      session (``auth.session_hours``), not per request.
    * ``verb``: ``scontrol hold JOB`` on a held job of user_a's, run by the service account
      directly (what ``jobs_run_as: service`` does) and through ``sudo -n -u user_a`` and the
      run-as helper (what ``jobs_run_as: owner`` does), K times each, interleaved; both through
      ``runuser -u hpcdet`` so that only the sudo and helper overhead differs. The ratio is
      reported side by side.

How to reproduce (as root)
    scripts/dev-cluster up && scripts/dev-cluster users
    .venv/bin/python bench/security.py            # human table
    .venv/bin/python bench/security.py --json     # one JSON object on stdout

The held job (``--job-name=hpcdet-bench-security``) is cancelled at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import log, run_script, terminate_as_interrupt  # noqa: E402

from hpcdet import munge  # noqa: E402

SERVICE, OWNER = "hpcdet", "user_a"
HELPER = "/usr/local/libexec/hpcdet-runas"
SLURM_CONF = "/etc/hpcdet/dev-cluster/slurm.conf"
CLEAN_ENV = ["env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", f"SLURM_CONF={SLURM_CONF}"]


def _timed(argv: Sequence[str], stdin: bytes | None = None) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(list(argv), input=stdin, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace').strip()}")
    return elapsed, done.stdout


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"median_ms": round(statistics.median(ms), 2), "min_ms": round(ms[0], 2),
            "max_ms": round(ms[-1], 2)}


def bench_login(count: int) -> dict[str, Any]:
    """munge as user_a, then unmunge (the master's side), ``count`` times."""
    payload = munge.login_payload("http://127.0.0.1:8080").encode()
    times = []
    for _ in range(count):
        encode, credential = _timed(["runuser", "-u", OWNER, "--", "munge", "--input=-"],
                                    payload)
        start = time.perf_counter()
        decoded = munge.decode(credential.decode().strip())
        times.append(encode + time.perf_counter() - start)
        assert decoded.payload == payload.decode()
    return {"count": count, **_summary(times)}


def _held_job() -> str:
    _, out = _timed(["runuser", "-u", OWNER, "--", *CLEAN_ENV, "sbatch", "--parsable", "--hold",
                     "--job-name=hpcdet-bench-security", "-o", "/dev/null", "--wrap", "true"])
    return out.decode().strip().split(";")[0]


def bench_verb(count: int) -> dict[str, Any]:
    """``scontrol hold`` direct vs through sudo and the helper, interleaved."""
    job = _held_job()
    direct_argv = ["runuser", "-u", SERVICE, "--", *CLEAN_ENV, "scontrol", "hold", job]
    helper_argv = ["runuser", "-u", SERVICE, "--", *CLEAN_ENV, "sudo", "-n", "-u", OWNER,
                   HELPER, "hold", job]
    direct, helper = [], []
    try:
        for _ in range(count):
            direct.append(_timed(direct_argv)[0])
            helper.append(_timed(helper_argv)[0])
    finally:
        subprocess.run(["scancel", job], env={**os.environ, "SLURM_CONF": SLURM_CONF},
                       capture_output=True, check=False)
    result = {"count": count, "direct": _summary(direct), "helper": _summary(helper)}
    result["ratio"] = round(result["helper"]["median_ms"] / result["direct"]["median_ms"], 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="repetitions of each (20)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (it runs commands as user_a and hpcdet with runuser)")
    log(f"reproduce: {sys.executable} bench/security.py --count {args.count}")
    with terminate_as_interrupt():
        report = {"login": bench_login(args.count), "verb": bench_verb(args.count)}
    if args.json:
        print(json.dumps(report))
        return 0
    login, verb = report["login"], report["verb"]
    print(f"{'what':<44} {'median ms':>10} {'min':>8} {'max':>8}")
    print(f"{'MUNGE login (munge as user_a + unmunge)':<44} {login['median_ms']:>10} "
          f"{login['min_ms']:>8} {login['max_ms']:>8}")
    for name, key in (("scontrol hold, service account directly", "direct"),
                      ("scontrol hold, as user_a via sudo + helper", "helper")):
        row = verb[key]
        print(f"{name:<44} {row['median_ms']:>10} {row['min_ms']:>8} {row['max_ms']:>8}")
    print(f"helper / direct: {verb['ratio']}x (n={verb['count']} each, interleaved)")
    return 0


if __name__ == "__main__":
    run_script(main)
