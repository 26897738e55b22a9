"""API latency while 20 proxied WebSockets are held open with echo traffic.

What is measured
    A real ``det-master`` (gunicorn with uvicorn workers, ``--workers``/``--threads``, open
    auth, a fresh SQLite database) with one RUNNING notebook task whose service is a WebSocket
    echo server in another process of this host (a stand-in for a Jupyter kernel channel; its
    address and secret are written into the task's row as the reconciler would write them).

    1. *alone*: ``--requests`` sequential ``GET /api/v1/tasks?kind=notebook`` on one
       keep-alive connection, ``--pause`` (20 ms) apart (the API answering other
       requests), each timed.
    2. *with WebSockets*: a load process opens ``--sockets`` (20) WebSockets through the
       master's proxy (``ws://master/proxy/<id>/ws``); each sends a 1 KiB message every
       ``--interval`` seconds and waits for its echo, for as long as the API requests of
       phase 1 are repeated and timed again.

    Reported side by side: the API's p50/p95/p99/max latency in both phases; the echo round
    trips through the proxy (p50/p99, messages, errors); and the threads of the gunicorn
    worker in each phase (``/proc/<pid>/status``): a held WebSocket is a coroutine on the
    worker's event loop, not a thread.

How to reproduce
    .venv/bin/python bench/proxy_ws.py                 # human table; --json for one object
    .venv/bin/python bench/proxy_ws.py --sockets 100 --interval 0.05

It needs nothing but this checkout's environment; it stops the master and its helpers at
the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import math
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _common import log, run_script, terminate_as_interrupt  # noqa: E402

from hpcdet.master.db import make_engine, make_session_factory, migrate, session_scope  # noqa: E402
from hpcdet.master.models import CommandTask  # noqa: E402
from hpcdet.master.transitions import transition  # noqa: E402
from hpcdet.states import State  # noqa: E402

USER = "bench"
MESSAGE = b"x" * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (ms) of ``values`` (s)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return 1000 * ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


# ---- the stand-in service and the WebSocket load (their own processes) ---------------------


def echo_server(port: int) -> None:
    from websockets.asyncio.server import ServerConnection, serve

    async def echo(connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)

    async def main() -> None:
        async with serve(echo, "127.0.0.1", port, max_size=None):
            await asyncio.Future()

    asyncio.run(main())


def ws_load(url: str, sockets: int, interval: float, ready: Any, stop: Any,
            results: Any) -> None:
    from websockets.asyncio.client import connect

    async def one(rtts: list[float], errors: list[str]) -> None:
        try:
            async with connect(url, additional_headers={"X-Hpcdet-User": USER},
                               max_size=None, open_timeout=30) as ws:
                opened.append(1)
                while not stop.is_set():
                    started = time.perf_counter()
                    await ws.send(MESSAGE)
                    if await ws.recv() != MESSAGE:
                        errors.append("wrong echo")
                    rtts.append(time.perf_counter() - started)
                    await asyncio.sleep(interval)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors.append(f"{type(exc).__name__}: {exc}")

    opened: list[int] = []

    async def main() -> None:
        rtts: list[float] = []
        errors: list[str] = []
        tasks = [asyncio.ensure_future(one(rtts, errors)) for _ in range(sockets)]
        while len(opened) + len(errors) < sockets:
            await asyncio.sleep(0.05)
        ready.set()
        await asyncio.gather(*tasks)
        results.put({"opened": len(opened), "rtts": rtts, "errors": errors[:5],
                     "error_count": len(errors)})

    asyncio.run(main())


# ---- the master ----------------------------------------------------------------------------


def start_master(workdir: Path, port: int, workers: int, threads: int) -> subprocess.Popen[bytes]:
    import yaml

    db = workdir / "master.sqlite"
    config = {"port": port, "host": "127.0.0.1", "db": {"url": f"sqlite:///{db}"},
              "webserver": {"workers": workers, "threads": threads},
              "reconciler": {"interval_seconds": 5}, "auth": {"mode": "open"},
              "state_dir": str(workdir / "state"),
              "resource_manager": {"master_host": "127.0.0.1", "cluster_name": "bench",
                                   "job_storage_root": str(workdir / "jobs")}}
    (workdir / "master.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([str(Path(sys.executable).parent / "det-master"), "--config",
                                str(workdir / "master.yaml")], env=env,
                               stdout=(workdir / "master.log").open("wb"),
                               stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if api_get(port, "/api/v1/master")[0] == 200:
                return process
        except OSError:
            pass
        if process.poll() is not None:
            raise SystemExit(f"det-master exited: {(workdir / 'master.log').read_text()[-2000:]}")
        time.sleep(0.5)
    raise SystemExit("det-master did not answer within 120 s")


def api_get(port: int, path: str, connection: http.client.HTTPConnection | None = None
            ) -> tuple[int, bytes]:
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"X-Hpcdet-User": USER})
    response = conn.getresponse()
    return response.status, response.read()


def add_served_task(db_url: str, job_dir: Path, echo_port: int) -> int:
    """A RUNNING notebook task whose service is the echo server (as the reconciler would
    have registered it)."""
    migrate(db_url)
    sessions = make_session_factory(make_engine(db_url))
    with session_scope(sessions) as session:
        task = CommandTask(owner=USER, name="bench-ws", job_dir=str(job_dir), cwd="/",
                           workdir=str(job_dir), output_pattern="none", kind="notebook",
                           options=[], args=[], cancel_requested=False,
                           service_host="127.0.0.1", service_port=echo_port,
                           service_token="bench-secret")
        session.add(task)
        transition(session, task, State.QUEUED, cause="bench")
        transition(session, task, State.RUNNING, cause="bench")
        session.flush()
        return task.id


def worker_pids(master: subprocess.Popen[bytes]) -> list[int]:
    """The gunicorn workers: the master's children running det-master (not the reconciler)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == master.pid and b"det-master" in cmdline:
            found.append(int(entry.name))
    return found


def threads_of(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                total += int(line.split()[1])
    return total


def time_requests(port: int, count: int, pause: float = 0.0) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies, errors = [], 0
    for _ in range(count):
        time.sleep(pause)
        started = time.perf_counter()
        status, _ = api_get(port, "/api/v1/tasks?kind=notebook", conn)
        latencies.append(time.perf_counter() - started)
        errors += status != 200
    conn.close()
    return latencies, errors


def row(name: str, values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2),
            "p99_ms": round(percentile(values, 99), 2),
            "max_ms": round(1000 * max(values), 2) if values else math.nan}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sockets", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.1,
                        help="seconds between one socket's messages")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--pause", type=float, default=0.02,
                        help="seconds between two API requests (a user, not a flood)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="hpcdet-bench-proxy-") as tmp, \
            terminate_as_interrupt():
        workdir = Path(tmp)
        port, echo_port = free_port(), free_port()
        echo = spawn.Process(target=echo_server, args=(echo_port,), daemon=True)
        echo.start()
        db_url = f"sqlite:///{workdir / 'master.sqlite'}"
        task_id = add_served_task(db_url, workdir / "jobs" / "task", echo_port)
        log(f"starting det-master on port {port} (task {task_id} -> echo on {echo_port})")
        master = start_master(workdir, port, args.workers, args.threads)
        try:
            workers = worker_pids(master)
            time_requests(port, 20)  # warm-up
            alone, alone_errors = time_requests(port, args.requests, args.pause)
            threads_alone = threads_of(workers)
            ready, stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
            load = spawn.Process(target=ws_load, args=(
                f"ws://127.0.0.1:{port}/proxy/{task_id}/ws", args.sockets, args.interval,
                ready, stop, results))
            load.start()
            if not ready.wait(60):
                raise SystemExit("the WebSockets did not open within 60 s")
            time.sleep(1.0)  # every socket exchanging messages
            threads_loaded = threads_of(workers)
            loaded, loaded_errors = time_requests(port, args.requests, args.pause)
            stop.set()
            ws = results.get(timeout=60)
            load.join(30)
        finally:
            master.terminate()
            master.wait(30)
            echo.terminate()
    report = {
        "sockets": args.sockets, "opened": ws["opened"], "interval_s": args.interval,
        "requests": args.requests, "workers": args.workers, "threads": args.threads,
        "api_alone": {**row("alone", alone), "errors": alone_errors},
        "api_with_websockets": {**row("loaded", loaded), "errors": loaded_errors},
        "echo_round_trip": {**row("echo", ws["rtts"]), "messages": len(ws["rtts"]),
                            "errors": ws["error_count"], "first_errors": ws["errors"]},
        "worker_threads": {"alone": threads_alone, "with_websockets": threads_loaded},
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{args.sockets} WebSockets through /proxy/{task_id}/ ({ws['opened']} opened), "
          f"1 KiB echo every {args.interval} s each; {args.requests} API requests per phase")
    print(f"{'':28} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}")
    for name, key in (("API alone", "api_alone"), ("API with WebSockets", "api_with_websockets"),
                      ("echo round trip (proxy)", "echo_round_trip")):
        r = report[key]
        print(f"{name:28} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['p99_ms']:8.2f} "
              f"{r['max_ms']:8.2f} {r['errors']:7}")
    print(f"echo messages: {len(ws['rtts'])}; worker threads: {threads_alone} alone, "
          f"{threads_loaded} with the WebSockets")
    return 0 if ws["opened"] == args.sockets and not ws["error_count"] else 1


if __name__ == "__main__":
    run_script(main)
