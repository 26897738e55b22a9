"""TensorBoard behind the task's secret: what a TensorBoard task's job runs as its server.

``python -m hpcdet.tensorboard.guard --token-file <job dir>/service_token <tensorboard flags>``
runs the unmodified ``tensorboard`` (its own flags, plugins and WSGI app) with one change:
every request must carry ``Authorization: token <secret>``, the task's per-task secret,
which the master's proxy adds to each request it forwards (as it does for Jupyter). Anything
else, e.g. someone on the cluster's network connecting to the node's port straight away,
gets 401 and no data. TensorBoard has no authentication of its own and listens on
``0.0.0.0`` so that the master can reach it; which hosts can reach the node's port is the
network's business, who may read it is this check's.

The secret is read from the 0600 file the master wrote into the job directory: never on a
command line (``ps``) or in the environment.
"""

from __future__ import annotations

import hmac
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# A WSGI application (PEP 3333), as TensorBoard's is: typed loosely, it is not ours.
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
TOKEN_FLAG = "--token-file"
REFUSED = b"401: this TensorBoard is reached through the hpcdet master's proxy\n"


def require_token(app: WsgiApp, token: str) -> WsgiApp:
    """``app``, answering 401 to any request without ``Authorization: token <token>``."""
    if not token:
        raise ValueError("an empty token would let everyone in")
    expected = f"token {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode("latin-1", "replace")
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response("401 Unauthorized", [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(REFUSED))),
            ("WWW-Authenticate", 'Token realm="hpcdet"')])
        return [REFUSED]

    return guarded


def split_token_file(argv: list[str]) -> tuple[Path, list[str]]:
    """The ``--token-file`` path and the rest of ``argv`` (TensorBoard's own flags)."""
    if TOKEN_FLAG not in argv[:-1]:
        raise SystemExit(f"hpcdet.tensorboard.guard: {TOKEN_FLAG} PATH is required")
    at = argv.index(TOKEN_FLAG)
    return Path(argv[at + 1]), argv[:at] + argv[at + 2:]


def read_secret(path: Path) -> str:
    """The task's secret; exits when it is missing or empty (never serve unguarded)."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SystemExit(f"hpcdet.tensorboard.guard: cannot read {path}: {exc.strerror}") \
            from None
    if not token:
        raise SystemExit(f"hpcdet.tensorboard.guard: {path} is empty")
    return token


def main(argv: list[str] | None = None) -> None:
    """Run TensorBoard as ``tensorboard.main`` does, behind :func:`require_token`."""
    from absl import app as absl_app
    from tensorboard import default, main_lib, program

    path, rest = split_token_file(list(sys.argv if argv is None else argv))
    token = read_secret(path)

    def server(wsgi_app: WsgiApp, flags: Any) -> Any:
        return program.WerkzeugServer(require_token(wsgi_app, token), flags)

    main_lib.global_init()
    board = program.TensorBoard(plugins=default.get_plugins(), server_class=server)
    sys.argv = rest  # absl reads TensorBoard's flags from here
    absl_app.run(board.main, flags_parser=board.configure)


if __name__ == "__main__":
    main()
