"""docs/determined-compatibility.md stays true: every name a "same" row gives exists.

For each table row whose hpcdet column starts with "same", the backticked names of the
Determined column must resolve in hpcdet:

- Python names (the "Training code" table): ``det.``/``determined.`` become ``hpcdet.``;
  ``core.X.name`` is an attribute of both the real and the ``Dummy*`` class of context
  ``X``; a bare name after a dotted one in the same cell is that owner's too; other bare
  names are hpcdet, hpcdet.pytorch or hpcdet.core names; ``name(a=, b=)`` also checks the
  keywords. Rows whose prose does not parse list their names in :data:`EXPLICIT`.
- ``det ...`` commands (any table): the command, every ``a|b`` alternative, later bare
  words of the cell (siblings of the last command) and its ``-x``/``--x`` options exist
  in hpcdet's click tree (loaded lazily, as ``det`` does).
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "determined-compatibility.md"
PY_TABLE = "Training code"
MODULES = ("hpcdet", "hpcdet.pytorch", "hpcdet.core")
CORE_CONTEXTS = {
    "train": ("TrainContext", "DummyTrainContext"),
    "checkpoint": ("CheckpointContext", "DummyCheckpointContext"),
    "preempt": ("PreemptContext", "DummyPreemptContext"),
    "distributed": ("DistributedContext", "DummyDistributedContext"),
    "searcher": ("SearcherContext",),
    "info": ("Info",),
    "profiler": ("ProfilerContext",),
}
# Rows (keyed by their first backticked name) whose prose names things the parser cannot
# place (nested fields, "batch sizes", "…"): their names, spelled as the parser takes them.
EXPLICIT: dict[str, list[str]] = {
    "det.core.init()": [
        "det.core.init", "core.Context", "core.train", "core.checkpoint", "core.preempt",
        "core.distributed", "core.searcher", "core.info", "core.profiler",
    ],
    "det.get_cluster_info()": [
        "det.get_cluster_info", "det.ClusterInfo.master_url", "det.ClusterInfo.cluster_id",
        "det.ClusterInfo.trial", "det.ClusterInfo.trial.trial_id",
        "det.ClusterInfo.trial.experiment_id", "det.ClusterInfo.trial.hparams",
        "det.ClusterInfo.trial.trial_seed", "det.ClusterInfo.user_data",
        "det.ClusterInfo.latest_checkpoint",
        "det.ClusterInfo.container_addrs", "det.ClusterInfo.container_rank",
        "det.ClusterInfo.slot_ids", "det.ClusterInfo.allocation_id",
        "det.ClusterInfo.task_type",
    ],
    "PyTorchTrial": [
        "pytorch.PyTorchTrial", "pytorch.PyTorchTrialContext",
        *(f"PyTorchTrialContext.{name}" for name in (
            "wrap_model", "wrap_optimizer", "wrap_lr_scheduler", "wrap_scaler", "backward",
            "step_optimizer", "to_device", "get_hparam", "get_hparams",
            "get_global_batch_size", "get_per_slot_batch_size", "is_epoch_start",
            "is_epoch_end")),
        "pytorch.PyTorchCallback", "det.pytorch.DataLoader",
        "pytorch.PyTorchTrial.evaluation_reducer", "pytorch.samplers",
    ],
    "determined.launch.torch_distributed": [
        "det.launch.torch_distributed", "det.launch.wrap_rank",
    ],
}
# Rows that name no Python API (prose about behaviour), checked elsewhere.
NO_NAMES = {"Trials taking `(context)`", "A script that calls"}


@dataclass
class Row:
    table: str
    determined: str
    hpcdet: str

    @property
    def label(self) -> str:
        return f"[{self.table}] {self.determined[:70]}"


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [part.strip().replace("\\|", "|") for part in parts]


def page_rows() -> list[Row]:
    rows, table = [], ""
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            table = line[3:].strip()
        elif line.startswith("|") and not line.startswith("|---"):
            cells = _cells(line)
            if len(cells) >= 2 and cells[0] != "Determined":
                rows.append(Row(table, cells[0], cells[1]))
    return rows


SAME_ROWS = [row for row in page_rows() if row.hpcdet.startswith("same")]


def _backticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _resolve_dotted(name: str) -> Any:
    """The object ``name`` (``det.x.y``, ``pytorch.X``, ``X.attr``) names in hpcdet; a
    ``core.<context>.x`` name gives a list: x on the real and on the dummy class."""
    parts = re.sub(r"^(det|determined)\.", "", name).split(".")
    if parts[0] == "core" and len(parts) >= 2 and parts[1] in CORE_CONTEXTS:
        core = importlib.import_module("hpcdet.core")
        return [_attribute(getattr(core, cls), parts[2:]) for cls in CORE_CONTEXTS[parts[1]]]
    for base in MODULES:
        for split in range(len(parts), -1, -1):
            try:
                module = importlib.import_module(".".join([base, *parts[:split]]))
            except ImportError:
                continue
            try:
                return _attribute(module, parts[split:])
            except AttributeError:
                break
    raise AttributeError(f"no {name} in {', '.join(MODULES)}")


def _attribute(obj: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(obj, property):  # look further on the type it returns
            obj = typing.get_type_hints(obj.fget)["return"]
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif inspect.isclass(obj) and part in inspect.signature(obj).parameters:
            obj = None  # an attribute __init__ sets (a dataclass field, say)
        else:
            raise AttributeError(f"{getattr(obj, '__name__', obj)!r} has no {part!r}")
    return obj


def python_names(cell: str) -> list[tuple[str, list[str]]]:
    """``(name, keywords)`` for each backticked Python name of ``cell``."""
    names, owner = [], ""
    for token in _backticked(cell):
        keywords = re.findall(r"(\w+)=", token)
        plain = re.sub(r"\([^()]*\)", "", token).strip()
        if not re.fullmatch(r"[A-Za-z][\w.]*", plain):
            continue  # prose: "get_*", "(+ _local)"
        last = plain.rsplit(".", 1)[-1]
        if "." in plain or last[0].isupper():
            # A class owns the lowercase names after it; a dotted function its parent does.
            owner = plain if last[0].isupper() else plain.rsplit(".", 1)[0]
            names.append((plain, keywords))
        elif owner:
            names.append((f"{owner}.{plain}", keywords))
        else:
            names.append((plain, keywords))
    return names


def _check_keywords(obj: Any, keywords: list[str]) -> list[str]:
    targets = obj if isinstance(obj, list) else [obj]
    missing = []
    for target in targets:
        params = inspect.signature(target).parameters
        missing += [k for k in keywords if k not in params]
    return missing


PY_ROWS = [row for row in SAME_ROWS if row.table == PY_TABLE
           and not any(row.determined.startswith(prefix) for prefix in NO_NAMES)]


@pytest.mark.parametrize("row", PY_ROWS, ids=lambda row: row.determined[:40])
def test_same_python_names_exist(row: Row) -> None:
    first = _backticked(row.determined)[0]
    explicit = EXPLICIT.get(first)
    names = [(name, []) for name in explicit] if explicit else python_names(row.determined)
    assert names, f"{row.label}: no name to check; list them in EXPLICIT"
    for name, keywords in names:
        try:
            obj = _resolve_dotted(name)
        except (AttributeError, ImportError) as exc:
            pytest.fail(f"{row.label}: {name} does not resolve in hpcdet ({exc})")
        missing = _check_keywords(obj, keywords) if keywords else []
        assert not missing, f"{row.label}: {name} takes no {missing}"


def _cli() -> click.Group:
    from hpcdet.cli.main import cli

    return cli


def _command(path: list[str]) -> click.Command | None:
    command: click.Command | None = _cli()
    for word in path[1:]:
        if not isinstance(command, click.Group):
            return None
        command = command.get_command(click.Context(command), word)
    return command


def _options(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def cli_claims(cell: str) -> list[tuple[list[str], list[str]]]:
    """``(command path, options)`` for each ``det ...`` name of ``cell``; a later bare word
    is a sibling of the last command."""
    claims: list[tuple[list[str], list[str]]] = []
    parent: list[str] = []
    for token in _backticked(cell):
        words = token.split()
        if words[0] == "det":
            path = [w for w in words if re.fullmatch(r"[a-z][\w-]*(\|[a-z][\w-]*)*", w)]
            path = path[: next((i for i, w in enumerate(words) if w.startswith(("[", "-"))),
                               len(words))]
        elif parent and re.fullmatch(r"[a-z][\w-]*(\|[a-z][\w-]*)*", words[0]):
            path = [*parent, words[0]]
        else:
            continue
        options = [o for o in re.findall(r"-{1,2}[a-z][\w-]*", " ".join(words[len(path):]))]
        parent = path[:-1] if len(path) > 1 else path
        for alternative in path[-1].split("|"):
            claims.append(([*path[:-1], alternative], options))
    return claims


CLI_CLAIMS = [(row, path, options) for row in SAME_ROWS
              for path, options in cli_claims(row.determined)]


@pytest.mark.parametrize("row, path, options", CLI_CLAIMS,
                         ids=[" ".join(path) for _, path, _ in CLI_CLAIMS])
def test_same_det_commands_exist(row: Row, path: list[str], options: list[str]) -> None:
    command = _command(path)
    assert command is not None, f"{row.label}: `{' '.join(path)}` is no hpcdet command"
    missing = [o for o in options if o not in _options(command)]
    assert not missing, f"{row.label}: `{' '.join(path)}` has no option {missing}"


def test_the_page_has_rows_to_check() -> None:
    assert len(PY_ROWS) >= 10 and len(CLI_CLAIMS) >= 40
