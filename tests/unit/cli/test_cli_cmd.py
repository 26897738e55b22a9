"""``det cmd`` against a fake master: what is sent, what is printed, the exit code."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)


def task(state: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {"id": 7, "job_id": "812", "state": state, "name": "det-cmd-python3",
            "kind": "command", "owner": "alice", "config": {"entrypoint": ["python3", "x"]},
            **extra}


def chunk(text: str, state: str, size: int) -> dict[str, Any]:
    return {"text": text, "next_offset": size, "size": size, "state": state}


def sent(fake_master: FakeMaster) -> dict[str, Any]:
    [request] = fake_master.sent("POST", "/commands")
    body: dict[str, Any] = json.loads(request.content)
    return body


def test_run_sends_the_entrypoint_and_the_merged_config(det: Det, fake_master: FakeMaster,
                                                        tmp_path: Path) -> None:
    config = tmp_path / "cmd.yaml"
    config.write_text("description: from the file\nresources:\n  slots: 1\n")
    fake_master.add("POST", "/commands", {"task": task(), "warnings": ["w1"]}, status=201)
    result = det("cmd", "run", "--config", str(config), "--config", "resources.slots=2",
                 "--config", "resources.resource_pool=gpu", "-d", "--",
                 "python3", "-c", "print(1)")
    assert result.exit_code == 0, result.output
    assert result.stdout == "7\n" and "w1" in result.stderr
    body = sent(fake_master)
    assert body["entrypoint"] == ["python3", "-c", "print(1)"]
    assert body["config"] == {"description": "from the file",
                              "resources": {"slots": 2, "resource_pool": "gpu"}}
    assert "context" not in body


def test_run_uploads_the_context(det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "train.py").write_text("print('hi')\n")
    fake_master.add("POST", "/commands", {"task": task()}, status=201)
    assert det("command", "run", "-c", str(tmp_path / "ctx"), "-d", "--", "python3",
               "train.py").exit_code == 0
    data = base64.b64decode(sent(fake_master)["context"])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert "train.py" in tar.getnames()


def test_run_follows_the_logs_and_exits_with_the_commands_code(
        det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("POST", "/commands", {"task": task()}, status=201)
    fake_master.add("GET", "/tasks/7", {"task": task()},
                    {"task": task("ERROR", exit_code=3)})
    text = "node1 812\n"

    def logs(request: Any) -> dict[str, Any]:  # from the offset asked for
        offset = int(request.url.params["offset"])
        return chunk(text[offset:], "ERROR", len(text))

    fake_master.add("GET", "/tasks/7/logs", logs)
    result = det("cmd", "run", "--", "python3", "x")
    assert result.exit_code == 3, result.output
    assert result.stdout == "node1 812\n"
    assert "Command 7 ended ERROR (exit code 3)" in result.stderr


def test_two_config_files_are_refused(det: Det, tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("{}\n")
    result = det("cmd", "run", "--config-file", str(tmp_path / "a.yaml"), "--config",
                 str(tmp_path / "b.yaml"), "--", "true")
    assert result.exit_code != 0 and "give one config file, not 2" in result.output


def test_a_bad_override_is_named(det: Det) -> None:
    result = det("cmd", "run", "--config", "resources..slots=2", "--", "true")
    assert result.exit_code != 0 and "has an empty part" in result.output


def test_run_needs_an_entrypoint(det: Det) -> None:
    result = det("cmd", "run")
    assert result.exit_code == 2 and "Missing argument 'ENTRYPOINT...'" in result.output


def test_master_errors_are_shown_with_the_key(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add_error("POST", "/commands", 400, "invalid_config",
                          "invalid command configuration",
                          ["<config>.resources.slots: must be an integer of at least 0"])
    result = det("cmd", "run", "--config", "resources.slots=-1", "--", "true")
    assert result.exit_code == 1
    assert "<config>.resources.slots: must be an integer" in result.output
    assert "Traceback" not in result.output


def test_list_asks_for_mine_unless_all(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks", {"tasks": [task("ERROR", exit_code=3)], "total": 1})
    result = det("cmd", "list")
    assert result.exit_code == 0 and "ERROR" in result.stdout and " 3 " in result.stdout
    assert det("cmd", "list", "--all", "--json").exit_code == 0
    mine, everyone = fake_master.sent("GET", "/tasks")
    assert mine.url.params["kind"] == "command" and mine.url.params["mine"] == "true"
    assert "mine" not in everyone.url.params


def test_describe_logs_and_kill_refuse_a_batch_task(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks/7", {"task": task(kind="batch")})
    for verb in ("describe", "logs", "kill"):
        result = det("cmd", verb, "7")
        assert result.exit_code == 1 and "task 7 is not a command" in result.output
    assert fake_master.sent("POST", "/tasks/7/kill") == []


def test_kill_and_describe(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks/7", {"task": task("RUNNING")})
    fake_master.add("POST", "/tasks/7/kill", {"task": task("STOPPING_KILLED")})
    assert "STOPPING_KILLED" in det("cmd", "kill", "7").stdout
    described = det("cmd", "describe", "7")
    assert described.stdout.startswith("Command: python3 x\nTask 7 (det-cmd-python3): RUNNING")
