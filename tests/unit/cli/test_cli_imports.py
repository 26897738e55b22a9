"""What ``det`` imports to start (issue 20: a cold start <= 50 ms; bench/cli_start.py times it):
each command is run in a fresh interpreter, which then names the modules it loaded. Not a
timing: an import that a command does not need fails here, whatever the host's speed.

The interpreter runs without site (``python -S``, the venv's site-packages put on the path
instead), as a wheel install starts but for site itself: the dev venv's site runs the
editable install's finder, which imports pathlib, urllib.parse, re and more before det
starts, and would hide those imports from the check.

* the only third-party package ``det --help`` and ``det experiment list`` import is click;
* no HTTP package (the client speaks HTTP/1.1 on a socket: not even http.client, whose
  email and ssl imports cost ~12 ms; ssl only for an https master), no urllib.parse (the
  client escapes and splits plain URLs itself), no YAML, no torch, SQLAlchemy or Flask;
  none of dataclasses, getpass, csv or pathlib;
* exactly the project's modules these commands use;
* ``det --help`` lists every command without importing its module, by the summaries kept
  in hpcdet.cli.main, which must match the commands' own short help.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
import pytest
from hang_guard import HANG_GUARD_S

from hpcdet.cli.main import _COMMANDS, _SUMMARIES, cli

REPO = Path(__file__).resolve().parents[3]
ALLOWED_THIRD_PARTY = {"click"}
DENIED = ("httpx", "httpcore", "h11", "anyio", "certifi", "idna", "rich", "pygments", "yaml",
          "jinja2", "torch", "numpy", "sqlalchemy", "flask", "werkzeug", "pathspec", "boto3",
          "jsonschema", "tabulate", "zoneinfo", "hpcdet.dispatcher", "hpcdet.master",
          "hpcdet.expconf", "hpcdet.searcher", "hpcdet.harness", "hpcdet.job",
          "hpcdet.cli.checkpoint",
          "hpcdet.cli.experiment_edit", "hpcdet.cli.trial", "hpcdet.cli.overrides", "tarfile",
          "tempfile", "shutil", "traceback", "http", "email", "ssl", "encodings.idna", "urllib",
          "ipaddress", "pathlib", "fnmatch", "dataclasses", "copy", "getpass", "termios", "csv",
          "base64")
# The project's modules each command imports: all of them, and only these.
HELP_MODULES = ["hpcdet", "hpcdet.cli", "hpcdet.cli._lazy", "hpcdet.cli.main", "hpcdet.errors"]
LIST_MODULES = sorted([*HELP_MODULES, "hpcdet.cli.experiment", "hpcdet.cli.lifecycle",
                       "hpcdet.cli.options", "hpcdet.cli.output", "hpcdet.cli.session",
                       "hpcdet.client", "hpcdet.client_http", "hpcdet.client_tls",
                       "hpcdet.client_url", "hpcdet.client_wire"])
SITE_PACKAGES = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
# Runs det as its console script does, then prints what it loaded beyond the interpreter's
# start, as JSON on the last line of stderr: the modules, and the top-level packages among
# them that come from site-packages (argv[1], os.pathsep-separated).
_PROBE = """
import sys
base = set(sys.modules)
roots = sys.argv.pop(1).split(":")
from hpcdet.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(set(sys.modules) - base)
import json
third = sorted({name.split(".")[0] for name in loaded
                if any(str(getattr(sys.modules[name], "__file__", None) or "").startswith(r + "/")
                       for r in roots) and not name.startswith("hpcdet")})
print(json.dumps({"modules": loaded, "third_party": third}), file=sys.stderr)
"""


def loaded_by(args: list[str], master: str, *, user: str | None = "alice") -> dict[str, Any]:
    """The modules ``det ARGS`` loads in a fresh interpreter without site, and its output;
    ``user``: ``DET_USER`` (None: unset, det finds the login name)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *SITE_PACKAGES]),
           "DET_MASTER": master}
    env.pop("DET_USER_TOKEN", None)
    env.pop("DET_USER", None)
    if user is not None:
        env["DET_USER"] = user
    done = subprocess.run([sys.executable, "-S", "-c", _PROBE, os.pathsep.join(SITE_PACKAGES),
                           *args], capture_output=True, text=True, env=env,
                          timeout=HANG_GUARD_S, cwd="/", check=False)
    *_, last = done.stderr.splitlines()
    return {**json.loads(last), "stdout": done.stdout, "stderr": done.stderr}


def denied_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == d or m.startswith(d + ".") for d in DENIED)]


@pytest.fixture(scope="module")
def live_master() -> Iterator[str]:
    """A stand-in master over real HTTP (the real one's answer shape for the list)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: Any) -> None:
            """Quiet."""

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps({"experiments": [
                {"id": 7, "name": "digits", "state": "ACTIVE", "owner": "alice",
                 "searcher": "single", "progress": 0.5, "labels": [],
                 "created_at": "2026-01-01T00:00:00+00:00", "archived": False,
                 "resource_pool": "batch", "trials": 1}], "total": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def project_modules(found: dict[str, Any]) -> list[str]:
    return [m for m in found["modules"] if m == "hpcdet" or m.startswith("hpcdet.")]


def test_help_imports_click_alone_and_no_command_module() -> None:
    found = loaded_by(["--help"], "http://127.0.0.1:1")
    assert "Usage: det" in found["stdout"]
    assert found["third_party"] == sorted(ALLOWED_THIRD_PARTY)
    assert denied_in(found["modules"]) == []
    assert project_modules(found) == HELP_MODULES
    assert "socket" not in found["modules"] and "json" not in found["modules"]


def test_experiment_list_against_a_master_imports_only_what_it_uses(live_master: str) -> None:
    found = loaded_by(["experiment", "list"], live_master)
    assert "digits" in found["stdout"]
    assert found["third_party"] == sorted(ALLOWED_THIRD_PARTY)
    assert denied_in(found["modules"]) == []
    assert project_modules(found) == sorted([*LIST_MODULES, "hpcdet.cli.tables"])


def test_experiment_list_against_an_unreachable_master() -> None:
    port = _closed_port()
    found = loaded_by(["experiment", "list"], f"http://127.0.0.1:{port}")
    assert "cannot reach the master" in found["stderr"]
    assert found["third_party"] == sorted(ALLOWED_THIRD_PARTY)
    assert denied_in(found["modules"]) == []
    assert project_modules(found) == LIST_MODULES


def test_experiment_list_without_det_user_finds_the_login_name_without_getpass(
        live_master: str) -> None:
    """``-u``'s default (no DET_USER): the login name, found without importing getpass."""
    found = loaded_by(["experiment", "list"], live_master, user=None)
    assert "digits" in found["stdout"]
    assert denied_in(found["modules"]) == []


@pytest.mark.parametrize("width", [30, 45, 80, 1000])
def test_each_summary_is_the_commands_own_short_help(width: int) -> None:
    ctx = click.Context(cli)
    for name, summary in _SUMMARIES.items():
        command = cli.get_command(ctx, name)
        assert command is not None and not command.hidden, name
        stand_in = click.Command(name, help=summary)
        assert stand_in.get_short_help_str(width) == command.get_short_help_str(width), name
    assert set(_SUMMARIES) == set(_COMMANDS)


@pytest.mark.parametrize(("columns", "width"), [("60", 58), ("200", 78), ("10", 50),
                                                ("junk", 78), ("0", 78)])
def test_help_width_is_clicks_without_shutil(monkeypatch: pytest.MonkeyPatch, columns: str,
                                             width: int) -> None:
    """``det`` hands click the width click would find with shutil (here stdout is no
    terminal, so COLUMNS or 80 decides, as in shutil.get_terminal_size)."""
    from hpcdet.cli.main import _help_width

    monkeypatch.setenv("COLUMNS", columns)
    assert _help_width() == width


def test_the_sdk_imports_no_server_or_training_package() -> None:
    """``from hpcdet.experimental import client`` (notebooks, pipelines, example trials that
    import it at module level) loads neither Flask, SQLAlchemy nor torch."""
    probe = ("import sys\nfrom hpcdet.experimental import client\n"
             "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *SITE_PACKAGES])}
    out = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert not {"flask", "werkzeug", "sqlalchemy", "torch", "numpy", "httpx"} & set(out)
