"""Where a master worker's CPU goes, from py-spy's folded stacks (``bench/ingest.py --py-spy``).

Each sample is put in the category of the *innermost* frame that matches one of
:data:`CATEGORIES` (so JSON parsing inside the view counts as JSON, not as the view), and the
shares are printed as a table. py-spy ran with ``--gil``: a sample is the thread that held
the GIL, i.e. where the worker's CPU went.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

# (category, substrings of a frame). Order matters only between patterns of one frame.
CATEGORIES: Sequence[tuple[str, Sequence[str]]] = (
    ("HTTP parsing and responses (uvicorn protocol)",
     ("uvicorn/protocols/", "h11/", "httptools")),
    ("event loop (asyncio/uvloop, selectors)", ("asyncio/base_events.py", "asyncio/events.py",
                                               "selectors.py", "uvloop")),
    ("a2wsgi bridge (WSGI adapter, its thread pool)", ("a2wsgi/", "concurrent/futures/")),
    ("Flask/werkzeug request handling", ("flask/", "werkzeug/")),
    ("fast metrics route (ASGI, api/metrics_asgi.py)", ("api/metrics_asgi.py",)),
    ("JSON parse", ("json/decoder.py", "json/__init__.py", "orjson")),
    ("body checks (depth, NUL, non-finite)", ("check_depth", "find_nul", "find_non_finite")),
    ("validation (metrics_batch)", ("metrics_batch", "_metrics_report", "_finite")),
    ("token check", ("_require_token_of", "token_matches", "token_of", "require_token")),
    ("view, other (apply_reports, answer)", ("report_metrics", "apply_reports")),
    ("writer: COPY text", ("insert_rows", "_copy_escape")),
    ("writer: statements (claim, progress, COPY I/O)", ("claim_fast", "_lock_and_read",
                                                         "finish", "copy_expert")),
    ("writer: commit, SQLAlchemy", ("_write_with_retry", "sqlalchemy/")),
    ("writer: effects", ("report_effects", "_effects")),
    ("writer, other", ("_apply_all", "MetricWriter._run", "_flush")),
    ("logging", ("logging/",)),
)
OTHER = "other"


def categorize(stack: str) -> str:
    """The category of one folded stack (``frame;frame;...``, outermost first)."""
    for frame in reversed(stack.split(";")):
        for name, patterns in CATEGORIES:
            if any(p in frame for p in patterns):
                return name
    return OTHER


def samples(paths: Iterable[Path]) -> Counter[str]:
    """Samples per category over every folded file (``stack count`` per line)."""
    counts: Counter[str] = Counter()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                counts[categorize(stack)] += int(count)
    return counts


def breakdown(directory: str | Path) -> dict[str, float]:
    """Share (0-1) of the workers' samples per category, largest first."""
    counts = samples(sorted(Path(directory).glob("worker-*.folded")))
    total = sum(counts.values())
    return {name: n / total for name, n in counts.most_common()} if total else {}


def render(shares: dict[str, float], samples_total: int | None = None) -> str:
    """The breakdown as a table."""
    head = "Where the workers' CPU went (py-spy --gil samples"
    head += f", {samples_total} in all):" if samples_total else "):"
    return "\n".join([head] + [f"  {name:<50} {share:>6.1%}" for name, share in shares.items()])


if __name__ == "__main__":
    import sys

    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    total = sum(samples(sorted(Path(folder).glob("worker-*.folded"))).values())
    print(render(breakdown(folder), total))
