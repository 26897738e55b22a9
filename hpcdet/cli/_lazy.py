"""Click groups with command aliases, and a group that imports its subcommands lazily.

``det --help`` must stay fast on a login node and must not import torch, SQLAlchemy,
Flask or httpx: :class:`LazyGroup` imports a subcommand's module only when that command
is invoked, and lists it in the help by a summary it is given (importing every command's
module to read its docstring cost ~25 ms); the command modules themselves import nothing
heavy at the top. Click's docs warn that lazy loading hides import errors, so
``tests/unit/cli`` runs ``--help`` on every command, and checks that each summary is the
command's own short help.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import click


class AliasedGroup(click.Group):
    """A group whose commands may also be called by short aliases (``det e ls``).

    Aliases are resolved by :meth:`get_command` and shown next to the command's name in
    the help, e.g. ``list (ls)``; they are not listed as commands of their own.
    """

    def __init__(self, *args: Any, aliases: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, str] = dict(aliases or {})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Report the canonical name, so usage lines say ``det experiment`` after ``det e``."""
        _, command, rest = super().resolve_command(ctx, args)
        return (command.name if command else None), command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = [(self._label(name), summary) for name in self.list_commands(ctx)
                    if (summary := self.summary(ctx, name)) is not None]
        if not commands:
            return
        limit = formatter.width - 6 - max(len(label) for label, _ in commands)
        with formatter.section("Commands"):
            formatter.write_dl([(label, summary(limit)) for label, summary in commands])

    def summary(self, ctx: click.Context, name: str) -> Callable[[int], str] | None:
        """How the help lists command ``name`` (its short help cut to a width), or None
        for a hidden one."""
        command = self.get_command(ctx, name)
        if command is None or command.hidden:
            return None
        return command.get_short_help_str

    def _label(self, name: str) -> str:
        shorts = sorted(alias for alias, target in self.aliases.items() if target == name)
        return f"{name} ({', '.join(shorts)})" if shorts else name


class LazyGroup(AliasedGroup):
    """A group whose subcommands live in modules imported on first use.

    ``lazy_subcommands`` maps a command name to ``"package.module:attribute"``;
    ``summaries`` maps it to the short help the group's help shows without importing it
    (a command without one is imported to be listed).
    """

    def __init__(self, *args: Any, lazy_subcommands: Mapping[str, str] | None = None,
                 summaries: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands: dict[str, str] = dict(lazy_subcommands or {})
        self.summaries: dict[str, str] = dict(summaries or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy_subcommands])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        name = self.aliases.get(cmd_name, cmd_name)
        if name in self.lazy_subcommands:
            return self._load(name)
        return super().get_command(ctx, name)

    def summary(self, ctx: click.Context, name: str) -> Callable[[int], str] | None:
        text = self.summaries.get(name)
        if text is None or name not in self.lazy_subcommands:
            return super().summary(ctx, name)
        # A stand-in command: click cuts its help to the width exactly as the real one's.
        return click.Command(name, help=text).get_short_help_str

    def _load(self, name: str) -> click.Command:
        module_name, attribute = self.lazy_subcommands[name].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attribute} is not a click command")
        return command
