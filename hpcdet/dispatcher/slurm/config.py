"""What the cluster says it is: one ``scontrol show config``, read once per backend.

hpcdet tells Slurm releases apart by what the controller reports (``SLURM_VERSION``,
``SlurmctldParameters``), never by guessing from the client's version or by trying an option
and reading the error: an option an older release lacks is used only where this says the
cluster has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hpcdet.dispatcher.base import ArrayLimits
from hpcdet.dispatcher.commands import Runner, UnparseableOutputError
from hpcdet.dispatcher.slurm.arrays import parse_array_limits

_LINE = re.compile(r"^\s*(?P<key>[A-Za-z_]+)\s*=\s*(?P<value>.*?)\s*$")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
SHOW_CONFIG = ("show", "config")
# The first release with --requeue=expedite (and the EXPEDITING state).
EXPEDITED_REQUEUE_SINCE = (25, 11)


@dataclass(frozen=True)
class SlurmConfig:
    """The parts of the controller's configuration hpcdet acts on."""

    #: ``SLURM_VERSION`` as numbers, e.g. ``(25, 11, 7)``.
    version: tuple[int, int, int]
    array_limits: ArrayLimits
    #: ``SlurmctldParameters``, one entry per comma-separated word (``name`` or ``name=value``).
    ctld_parameters: frozenset[str]
    #: ``SLURM_VERSION`` as printed, e.g. ``22.05.8``.
    version_text: str

    @property
    def expedited_requeue(self) -> bool:
        """Whether jobs may ask for ``--requeue=expedite``: 25.11 or newer, and allowed by
        ``SlurmctldParameters=enable_expedited_requeue`` (sbatch refuses it otherwise)."""
        return (self.version[:2] >= EXPEDITED_REQUEUE_SINCE
                and "enable_expedited_requeue" in self.ctld_parameters)


def parse_config(stdout: str, argv: tuple[str, ...] = ("scontrol", *SHOW_CONFIG)) -> SlurmConfig:
    """The :class:`SlurmConfig` in ``scontrol show config``'s output."""
    values: dict[str, str] = {}
    for line in stdout.splitlines():
        match = _LINE.match(line)
        if match:
            values.setdefault(match.group("key"), match.group("value"))
    version = _VERSION.match(values.get("SLURM_VERSION", ""))
    if version is None:
        raise UnparseableOutputError(argv, stdout, "a SLURM_VERSION line like 25.11.7")
    parameters = values.get("SlurmctldParameters", "")
    words = frozenset(word.strip() for word in parameters.split(",")
                      if word.strip() and parameters != "(null)")
    return SlurmConfig((int(version.group(1)), int(version.group(2)), int(version.group(3) or 0)),
                       parse_array_limits(stdout), words, version.group(0))


def read_config(runner: Runner, scontrol: str = "scontrol") -> SlurmConfig:
    """One ``scontrol show config``."""
    argv = (scontrol, *SHOW_CONFIG)
    return parse_config(runner(argv), argv)
