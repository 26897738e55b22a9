"""``det checkpoint`` and ``det experiment list-checkpoints`` against a fake master."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)
UUID = "3f1c2d4e-0000-4000-8000-000000000001"


def _checkpoint(state: str = "ACTIVE", storage_path: str | None = None) -> dict[str, Any]:
    return {"uuid": UUID, "trial_id": 7, "experiment_id": 5, "steps_completed": 500,
            "state": state, "metadata": {"framework": "torch"},
            "resources": {"model.pt": 2048}, "validation_metrics": {"loss": 0.12},
            "reported_at": "2024-05-01T12:10:00+00:00",
            "storage_path": storage_path or f"/nonexistent/shared/{UUID}",
            "searcher_metric": "loss", "searcher_metric_value": 0.12,
            "smaller_is_better": True}


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_list_checkpoints_shows_a_table_and_asks_for_active_ones(
        det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/experiments/5/checkpoints", {
        "checkpoints": [_checkpoint()], "searcher_metric": "loss", "smaller_is_better": True})
    result = det("e", "lc", "5")
    assert result.exit_code == 0, result.output
    header, rule, row = result.stdout.splitlines()
    assert header.split() == ["UUID", "Trial", "Steps", "State", "loss", "Reported"]
    assert row.split()[:5] == [UUID, "7", "500", "ACTIVE", "0.12"]
    sent = fake_master.sent("GET", "/experiments/5/checkpoints")[0]
    assert dict(sent.url.params) == {"state": "ACTIVE"}


def test_list_checkpoints_best_and_all_and_json(det: Det, fake_master: FakeMaster) -> None:
    answer = {"checkpoints": [_checkpoint()], "searcher_metric": "loss"}
    fake_master.add("GET", "/experiments/5/checkpoints", answer)
    result = det("experiment", "list-checkpoints", "5", "--best", "2", "--all", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == answer
    sent = fake_master.sent("GET", "/experiments/5/checkpoints")[0]
    assert dict(sent.url.params) == {"state": "ALL", "best": "2"}


def test_describe_shows_every_section(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", f"/checkpoints/{UUID}", {"checkpoint": _checkpoint()})
    result = det("c", "describe", UUID)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(f"Checkpoint {UUID}\n")
    assert "  experiment:" in out and "  storage path:" in out and "2.0 KiB" in out
    assert "Validation metrics:\n  loss: 0.12" in out
    assert "Metadata:\n  framework: torch" in out


def test_describe_unknown_checkpoint_is_one_error_line(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add_error("GET", "/checkpoints/nope", 404, "not_found",
                          "checkpoint nope not found")
    result = det("checkpoint", "describe", "nope")
    assert result.exit_code == 1
    assert result.stderr == "Error: checkpoint nope not found\n"


def test_download_streams_from_the_master_into_the_default_directory(
        det: Det, fake_master: FakeMaster, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fake_master.add("GET", f"/checkpoints/{UUID}", {"checkpoint": _checkpoint()})
    data = _tar({"model.pt": b"weights", "sub/opt.pt": b"opt"})
    fake_master.add("GET", f"/checkpoints/{UUID}/download", httpx.Response(
        200, content=data, headers={"Content-Length": str(len(data))}))
    result = det("checkpoint", "download", UUID)
    assert result.exit_code == 0, result.output
    target = tmp_path / "checkpoints" / UUID
    assert (target / "model.pt").read_bytes() == b"weights"
    assert (target / "sub" / "opt.pt").read_bytes() == b"opt"
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [UUID]
    assert "from the master" in result.stdout


def test_download_copies_directly_when_the_storage_path_is_readable(
        det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    source = tmp_path / "shared" / UUID
    source.mkdir(parents=True)
    (source / "model.pt").write_bytes(b"direct")
    fake_master.add("GET", f"/checkpoints/{UUID}",
                    {"checkpoint": _checkpoint(storage_path=str(source))})
    result = det("checkpoint", "download", UUID, "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "model.pt").read_bytes() == b"direct"
    assert fake_master.sent("GET", f"/checkpoints/{UUID}/download") == []


def test_download_refuses_a_non_empty_directory_unless_forced(
        det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    fake_master.add("GET", f"/checkpoints/{UUID}", {"checkpoint": _checkpoint()})
    fake_master.add("GET", f"/checkpoints/{UUID}/download",
                    httpx.Response(200, content=_tar({"model.pt": b"new"})))
    refused = det("checkpoint", "download", UUID, "-o", str(out))
    assert refused.exit_code == 1
    assert "is not empty" in refused.stderr and "--force" in refused.stderr
    assert fake_master.requests == []
    forced = det("checkpoint", "download", UUID, "-o", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in out.iterdir()) == ["model.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging left behind


def test_a_failed_download_leaves_no_directory_behind(
        det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    fake_master.add("GET", f"/checkpoints/{UUID}", {"checkpoint": _checkpoint()})
    fake_master.add_error("GET", f"/checkpoints/{UUID}/download", 404, "not_found",
                          f"checkpoint {UUID}: its files are not at /x")
    result = det("checkpoint", "download", UUID, "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "its files are not at /x" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_download_of_a_deleted_checkpoint_is_an_error(
        det: Det, fake_master: FakeMaster, tmp_path: Path) -> None:
    fake_master.add("GET", f"/checkpoints/{UUID}", {"checkpoint": _checkpoint("DELETED")})
    result = det("checkpoint", "download", UUID, "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: checkpoint {UUID} was deleted by checkpoint garbage "
                             "collection\n")
    assert not (tmp_path / "out").exists()
