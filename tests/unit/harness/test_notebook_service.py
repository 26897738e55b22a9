"""The job side of det notebook (hpcdet.services.notebook): Jupyter's settings and command
line, service.json, and the wait for Jupyter. JupyterLab itself runs in
tests/integration/test_it_notebooks.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hpcdet.services import notebook
from hpcdet.services.service_file import free_port, node_name, write_service_file

pytestmark = pytest.mark.interactive


def test_the_token_is_in_the_private_config_never_on_the_command_line(tmp_path: Path) -> None:
    config = notebook.jupyter_config("s3cret", "/work", idle_seconds=120)
    assert config["IdentityProvider"]["token"] == "s3cret"
    assert config["ServerApp"]["shutdown_no_activity_timeout"] == 120
    assert config["MappingKernelManager"]["cull_idle_timeout"] == 120
    assert config["MappingKernelManager"]["cull_connected"] is True
    argv = notebook.jupyter_argv(4242, "17")
    assert "--ServerApp.base_url=/proxy/17/" in argv and "--port=4242" in argv
    assert not any("s3cret" in word or "token" in word.lower() for word in argv)
    never_idle = notebook.jupyter_config("t", "/", None)
    assert "shutdown_no_activity_timeout" not in never_idle["ServerApp"]
    path = tmp_path / "config.json"
    notebook.write_private(path, json.dumps(config))
    assert path.stat().st_mode & 0o777 == 0o600


def test_jupyterlab_reads_the_lab_defaults_from_the_private_config_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read back by Jupyter's own reader of default setting overrides, as JupyterLab does.
    from jupyter_server.services.config.manager import ConfigManager

    notebook.write_lab_defaults(tmp_path)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    overrides = ConfigManager(config_dir_name="labconfig").get("default_setting_overrides")
    assert overrides["@jupyterlab/notebook-extension:tracker"] == {"autoStartDefaultKernel": True}
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_service_json_is_written_whole(tmp_path: Path) -> None:
    write_service_file(tmp_path, 8888, host="node7")
    assert json.loads((tmp_path / "service.json").read_text()) == {"host": "node7",
                                                                   "port": 8888}
    assert [p.name for p in tmp_path.iterdir()] == ["service.json"]  # no temporary left
    # Others may not read it; the group bits carry the master's ACL in a shared job root.
    assert (tmp_path / "service.json").stat().st_mode & 0o777 == 0o640


def test_the_node_is_named_as_pbs_placed_the_job_else_by_host_name(tmp_path: Path) -> None:
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("pbsn2\npbsn2\npbsn1\n")
    assert node_name({"PBS_NODEFILE": str(nodefile)}) == "pbsn2"
    assert node_name({}) == socket.gethostname()
    assert node_name({"PBS_NODEFILE": str(tmp_path / "gone")}) == socket.gethostname()


def test_a_jupyter_that_exits_first_is_not_announced() -> None:
    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert not notebook.wait_until_answering(child, free_port(), "1", "t", timeout=30)
    assert child.wait() == 3


def test_a_jupyter_that_never_answers_is_stopped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert not notebook.wait_until_answering(child, free_port(), "1", "t", timeout=1)
    assert child.wait(10) != 0
