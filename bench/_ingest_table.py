"""The tables of bench/ingest.py: one run in full, or several side by side."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

# ---- output ------------------------------------------------------------------------------


def render_table(result: dict[str, Any]) -> str:
    """One run: its full table; several (a scenario, a baseline): side by side."""
    runs = result["runs"]
    head = [f"# reproduce: {result['reproduce']}", "",
            f"Metric ingest: {result['rows_per_request']} rows/request ({result['batch_steps']} "
            f"steps x {result['metrics']} metrics, "
            f"{'the harness bodies: stream + seq' if result['streams'] else 'no stream'}), "
            f"det-master {result['workers']} workers x {result['threads']} threads, "
            f"PostgreSQL; {result['client_processes']} client process(es)",
            f"window {result['seconds']:g} s after {result['warmup']:g} s warm-up; the host has "
            f"{os.cpu_count()} cores", ""]
    body = _one_run(runs[0]) if len(runs) == 1 else _side_by_side(runs)
    profiles = [f"\n{r['label']} [{r['tree']}]:\n" + "\n".join(
        f"  {name:<50} {share:>6.1%}" for name, share in r["profile"].items())
        for r in runs if r.get("profile")]
    if profiles:
        body += ["", "Where the workers' CPU went (py-spy --gil samples, innermost matching "
                 "frame; bench/_ingest_profile.py):"] + profiles
    return "\n".join(head + body)


def _one_run(a: dict[str, Any]) -> list[str]:
    targets, lat = a["targets"], a["latency_ms"]
    detail, ok = a["errors_detail"], a["requests_ok"]
    p99_target = f"< {a['p99_target_ms']:g}" if a["p99_target_ms"] else ""
    rows_target = f">= {a['rows_target']:,.0f}"
    lines = [
        f"{a['label']} [{a['tree']}]; load: "
        + (f"paced, {a['rate']:,.0f} rows/s offered" if a["rate"] else
           "closed loop, each reporter sends its next request as soon as one is answered"), "",
        f"{'measure':<28} {'value':>12}  {'target':<14} verdict", "-" * 66,
        f"{'rows/s stored':<28} {a['rows_per_s']:>12,.0f}  {rows_target:<14} "
        f"{_verdict(targets['rows_per_s'])}",
        f"{'  (server clock cross-check)':<28} {a['rows_per_s_server_clock']:>12,.0f}",
        f"{'requests/s':<28} {a['requests_per_s']:>12,.1f}",
        f"{'latency p50 ms':<28} {lat['p50']:>12.1f}",
        f"{'latency p90 ms':<28} {lat['p90']:>12.1f}",
        f"{'latency p99 ms':<28} {lat['p99']:>12.1f}  {p99_target:<14} "
        f"{_verdict(targets['p99_ms']) if 'p99_ms' in targets else ''}",
        f"{'latency max ms':<28} {lat['max']:>12.1f}",
        f"{'errors':<28} {a['errors']:>12}  {'0':<14} {_verdict(targets['errors'])}", "",
        f"requests ok: warm-up {ok['warmup']}, window {ok['window']}, drain {ok['drain']}; "
        f"rows in db {detail['db_rows']:,} vs expected {detail['db_rows_expected']:,} "
        f"(difference {detail['db_row_difference']}); trials with wrong steps_completed: "
        f"{detail['trials_with_wrong_steps_completed']}",
    ]
    if a["rate"]:
        lines.append(f"paced requests due but never sent (master behind): "
                     f"{a['requests_due_but_unsent']}")
    lines.append("client connections per gunicorn worker: "
                 f"{' / '.join(map(str, a['connections_per_worker']))}")
    if detail["first_exceptions"]:
        lines.append(f"first errors: {detail['first_exceptions']}")
    lines += ["", "CPU during the window:", f"  {'':<50} {'cores':>6} {'ms/request':>11}"]
    per_request = a["cpu_ms_per_request"]
    lines += [f"  {role:<50} {cores:>6.2f} {per_request[role]:>11.2f}"
              for role, cores in a["cpu_cores"].items()]
    return lines


_CPU_ROWS = (("CPU ms/request: workers", "gunicorn workers"),
             ("  PostgreSQL backends", "postgres backends (bench db)"),
             ("  bench client(s)", None),
             ("cores: rest of host", "rest of host (other users' processes, kernel)"),
             ("cores: host total busy", "host total busy"))


_SHORT = {"rows_per_s": "rate", "p99_ms": "p99", "errors": "errors"}


def _side_by_side(runs: list[dict[str, Any]]) -> list[str]:
    width = max(24, *(len(r["label"]) + 2 for r in runs))

    def row(name: str, cells: Sequence[str]) -> str:
        return f"{name:<34}" + "".join(f"{c:>{width}}" for c in cells)

    lines = [row("", [r["label"] for r in runs]), row("", [f"[{r['tree']}]" for r in runs]),
             "-" * (34 + width * len(runs)),
             row("rows/s stored", [f"{r['rows_per_s']:,.0f}" for r in runs]),
             row("  target", [f">= {r['rows_target']:,.0f}" for r in runs]),
             row("requests/s", [f"{r['requests_per_s']:,.1f}" for r in runs])]
    lines += [row(f"latency {q} ms", [f"{r['latency_ms'][q]:.1f}" for r in runs])
              for q in ("p50", "p90", "p99", "max")]
    lines += [row("  p99 target", [f"< {r['p99_target_ms']:g}" if r["p99_target_ms"] else "-"
                                   for r in runs]),
              row("errors", [str(r["errors"]) for r in runs]),
              row("requests due but never sent", [str(r["requests_due_but_unsent"])
                                                  for r in runs]),
              row("connections per worker", [" / ".join(map(str, r["connections_per_worker"]))
                                             for r in runs])]
    for name, role in _CPU_ROWS:
        cells = []
        for r in runs:
            source = r["cpu_ms_per_request"] if name.startswith(("CPU", "  ")) else r["cpu_cores"]
            value = (source["bench client (this process)"]
                     + source.get("bench client processes", 0.0)) if role is None else source[role]
            cells.append(f"{value:.2f}")
        lines.append(row(name, cells))
    lines += ["", row("verdict", ["met" if all(r["targets"].values()) else "MISSED " + ",".join(
        _SHORT[k] for k, met in r["targets"].items() if not met) for r in runs])]
    return lines


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"
