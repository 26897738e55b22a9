"""Commands that do one thing with one route and show the master's answer: ``det model
archive NAME`` (POST, then a message), ``det checkpoint describe UUID`` (GET, then the answer
as JSON or text).

These factories make them, so that each such command asks, prints and fails the same way; a
command module names the command, the route and what people read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from hpcdet.cli.main import CliState, pass_state
from hpcdet.cli.options import JSON_OPTION
from hpcdet.cli.output import print_answer

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def verb_command(verb: str, help_text: str, argument: str, path: Callable[..., str],
                 done: str) -> click.Command:
    """``VERB ARGUMENT``: POST (no body) to ``path(ARGUMENT, VERB)``, then print ``done``
    with ARGUMENT in its ``{}``."""

    @click.command(verb, help=help_text)
    @click.argument(argument)
    @pass_state
    def command(state: CliState, /, **values: str) -> None:
        value = values[argument]
        state.client().post(path(value, verb))
        click.echo(done.format(value))

    return command


def show_command(name: str, help_text: str, route: Callable[..., str],
                 text: Callable[[Any], str], *params: Decorator) -> click.Command:
    """``NAME PARAMS... [--json]``: GET ``route(**values of PARAMS)`` and print the answer,
    as JSON with ``--json``, else as ``text(answer)``. ``params`` are click's argument and
    option decorators, in the order a command's decorators would list them."""

    @pass_state
    def command(state: CliState, /, as_json: bool, **values: Any) -> None:
        print_answer(state.client().get(route(**values)), as_json, text)

    decorators: list[Decorator] = [*params, JSON_OPTION]
    decorated: Callable[..., Any] = command
    for decorator in reversed(decorators):  # the last one listed is applied first
        decorated = decorator(decorated)
    return click.command(name, help=help_text)(decorated)


__all__ = ["show_command", "verb_command"]
