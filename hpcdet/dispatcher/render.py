"""The Jinja2 environment for job scripts, and the one helper that writes directive lines.

Templates come from ``hpcdet/slurm_templates`` unless a site directory holds a file of the
same name, which wins. Nothing is HTML-escaped (these are shell scripts); every value a
template interpolates goes through the ``shquote`` filter, and undefined variables fail.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

import jinja2

from hpcdet.dispatcher.safety import check_safe, shquote
from hpcdet.errors import ValidationError

DirectiveValue = str | int | bool | None

_DIRECTIVE_KEY = re.compile(r"^[a-z][a-z0-9-]*$")


def make_environment(site_dir: str | None = None) -> jinja2.Environment:
    """A Jinja2 environment over the packaged templates, with ``site_dir`` searched first."""
    package = jinja2.PackageLoader("hpcdet", "slurm_templates")
    loader: jinja2.BaseLoader = package
    if site_dir is not None:
        loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(site_dir), package])
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shquote"] = shquote
    return env


def directive_quote(value: str, where: str) -> str:
    """Quote ``value`` for an ``#SBATCH`` line as Slurm's own parser reads it.

    Slurm splits directive lines like a shell (single and double quotes), but treats a
    backslash as an escape even inside single quotes, so backslashes are doubled after
    :func:`shlex.quote` (which never emits one itself).
    """
    return shlex.quote(check_safe(value, where)).replace("\\", "\\\\")


def render_directives(prefix: str, mapping: Mapping[str, DirectiveValue]) -> str:
    """Render ``mapping`` as ``<prefix> --key=value`` lines, sorted by key.

    ``True`` gives a bare ``--key``; ``None`` and ``False`` leave the key out. Keys must be
    long option names without dashes (``job-name``); values are quoted for Slurm.
    """
    lines = []
    for key in sorted(mapping):
        value = mapping[key]
        if not _DIRECTIVE_KEY.match(key):
            raise ValidationError(f"invalid directive name {key!r} (expected e.g. 'job-name')")
        if value is None or value is False:
            continue
        if value is True:
            lines.append(f"{prefix} --{key}")
        else:
            lines.append(f"{prefix} --{key}={directive_quote(str(value), f'--{key}')}")
    return "\n".join(lines)
