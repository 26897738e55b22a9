"""The agent inside an allocation of allocation mode (docs/allocation-mode.md).

It runs in the allocation's batch step and loops: report what happened (steps started and
exited) to the master, and do what the answer says (launch a trial's job script, end a
step, exit). Each trial runs its own job script, as written by the master into the trial's
job directory; inside the allocation that script's ``srun`` becomes a step of exactly the
trial's ranks (``SLURM_EXACT=1``), so several trials share the allocation side by side.

Only the standard library and :mod:`hpcdet.jobfiles` are used: the agent talks to the
master over HTTP with the allocation's own bearer token and never imports the master.
While the master cannot be reached the agent keeps its children running and its reports
queued, and sends them once the master answers again (reports are idempotent).

    python -m hpcdet.launch.allocation_agent --master URL --allocation ID --token-file PATH
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcdet.jobfiles import exit_reason_path, restart_count

# Seconds a step has to end after SIGTERM before its processes are killed.
KILL_GRACE = 30.0
# Backoff while the master is unreachable (seconds): doubling up to the maximum.
BACKOFF_INITIAL, BACKOFF_MAX = 0.5, 15.0
REQUEST_TIMEOUT = 30.0
# How often the agent looks at its steps between two exchanges (seconds).
REAP_EVERY = 0.2
# Answers that mean the allocation is not (or no longer) this master's: the agent exits.
_FATAL_STATUSES = frozenset({400, 401, 403, 404})

Exchange = Callable[[list[dict[str, Any]]], dict[str, Any]]
StepKey = tuple[int, int]  # (trial id, run id)


class FatalAnswer(Exception):
    """The master refused the allocation (bad token, unknown allocation)."""


@dataclass
class Step:
    """One trial run the agent started."""

    process: subprocess.Popen[bytes]
    term_sent_at: float | None = None


@dataclass
class Agent:
    """The agent's loop; ``exchange`` posts events and returns the master's answer."""

    exchange: Exchange
    job_id: str
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    steps: dict[StepKey, Step] = field(default_factory=dict)
    # Every step ever launched or refused: a resent launch is never run twice.
    seen: set[StepKey] = field(default_factory=set)
    outbox: list[dict[str, Any]] = field(default_factory=list)

    def run(self) -> int:
        """Loop until the master says exit; 0, or 1 when it refuses the allocation."""
        backoff = BACKOFF_INITIAL
        while True:
            self._reap()
            try:
                answer = self.exchange(list(self.outbox))
            except FatalAnswer as exc:
                print(f"hpcdet allocation agent: the master refused: {exc}", file=sys.stderr)
                self._end_all()
                return 1
            except OSError as exc:  # unreachable, 5xx, timeout: keep going, ask again
                print(f"hpcdet allocation agent: master unreachable ({exc}); retrying in "
                      f"{backoff:.1f} s", file=sys.stderr, flush=True)
                self.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            backoff = BACKOFF_INITIAL
            self.outbox.clear()
            self._act(answer)
            if answer.get("exit") and not self.steps:
                return 0
            self._wait(float(answer.get("interval") or 1.0))

    def _wait(self, interval: float) -> None:
        """Sleep up to ``interval`` seconds, less when there is news: what was just launched
        (its start) goes out at once, and a step's exit within :data:`REAP_EVERY` seconds,
        so that its slot is filled again without waiting for the next exchange."""
        waited = 0.0
        while not self.outbox and waited < interval:
            self.sleep(min(REAP_EVERY, interval - waited))
            waited += REAP_EVERY
            self._reap()

    def _act(self, answer: Mapping[str, Any]) -> None:
        for item in answer.get("launch") or []:
            key = (int(item["trial_id"]), int(item["run_id"]))
            if key not in self.seen:
                self.seen.add(key)
                self._launch(key, str(item["script"]), str(item["job_dir"]))
        for item in answer.get("cancel") or []:
            key = (int(item["trial_id"]), int(item["run_id"]))
            if key in self.steps:
                self._terminate(self.steps[key])
            elif key not in self.seen:  # ended before it started
                self.seen.add(key)
                self.outbox.append(_event(key, "exited", exit_code=None))

    def _launch(self, key: StepKey, script: str, job_dir: str) -> None:
        """Start the trial's job script in its job directory, output next to a job's."""
        directory = Path(job_dir)
        # The harness names why it stopped by job id and requeue count, which repeat for
        # every run in this allocation: an earlier run's file must not speak for this one.
        exit_reason_path(directory, self.job_id, restart_count(self.environ)).unlink(
            missing_ok=True)
        stem = directory / f"slurm-{self.job_id}.{key[1]}"
        env = {**self.environ, "SLURM_EXACT": "1"}
        try:
            with open(f"{stem}.out", "ab") as out, open(f"{stem}.err", "ab") as err:
                process = subprocess.Popen(["/bin/bash", script], cwd=directory, env=env,
                                           stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                           start_new_session=True)
        except OSError as exc:
            print(f"hpcdet allocation agent: cannot start trial {key[0]} run {key[1]}: {exc}",
                  file=sys.stderr, flush=True)
            self.outbox.append(_event(key, "exited", exit_code=None))
            return
        self.steps[key] = Step(process)
        self.outbox.append(_event(key, "started"))

    def _terminate(self, step: Step) -> None:
        if step.term_sent_at is None:
            step.term_sent_at = self.clock()
            _signal_group(step.process, signal.SIGTERM)

    def _reap(self) -> None:
        """Report the steps that ended; kill those that outlived their grace."""
        for key, step in list(self.steps.items()):
            code = step.process.poll()
            if code is None:
                if step.term_sent_at is not None and \
                        self.clock() - step.term_sent_at > KILL_GRACE:
                    _signal_group(step.process, signal.SIGKILL)
                continue
            del self.steps[key]
            self.outbox.append(_event(key, "exited", exit_code=_shell_code(code)))

    def _end_all(self) -> None:
        for step in self.steps.values():
            _signal_group(step.process, signal.SIGTERM)


def _event(key: StepKey, kind: str, **extra: Any) -> dict[str, Any]:
    return {"trial_id": key[0], "run_id": key[1], "event": kind, **extra}


def _shell_code(code: int) -> int:
    """A child killed by signal N reads 128+N, as a shell (and sacct) says it."""
    return 128 - code if code < 0 else code


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def http_exchange(master: str, allocation_id: int, token: str,
                  cert_file: str | None = None) -> Exchange:
    """POST ``/api/v1/allocations/<id>/exchange``: 4xx raise :class:`FatalAnswer`, every
    other failure an :class:`OSError` (the agent retries those)."""
    url = f"{master.rstrip('/')}/api/v1/allocations/{allocation_id}/exchange"
    context = ssl.create_default_context(cafile=cert_file) if cert_file else None

    def exchange(events: list[dict[str, Any]]) -> dict[str, Any]:
        body = json.dumps({"events": events}).encode()
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT,
                                        context=context) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:  # it holds the connection open
                detail = exc.read()[:500]
            if exc.code in _FATAL_STATUSES:
                raise FatalAnswer(f"HTTP {exc.code}: {detail!r}") from None
            raise OSError(f"HTTP {exc.code}") from None
        except ValueError as exc:  # not JSON: a proxy's error page
            raise OSError(f"unreadable answer: {exc}") from None
        if not isinstance(answer, dict):
            raise OSError("unreadable answer: not a JSON object")
        return answer

    return exchange


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hpcdet.launch.allocation_agent")
    parser.add_argument("--master", required=True)
    parser.add_argument("--allocation", type=int, required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--cert-file")
    args = parser.parse_args(argv)
    token = Path(args.token_file).read_text().strip()
    job_id = os.environ.get("SLURM_JOB_ID", "unknown")
    agent = Agent(http_exchange(args.master, args.allocation, token, args.cert_file), job_id)
    # scancel and the walltime: the steps end with the allocation; say so and stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
