"""``det sbatch`` and ``det task`` against a fake master: what is sent, what is printed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result

from hpcdet.cli.sbatch import exit_status
from hpcdet.dispatcher.slurm.sbatch_command import export_environment, prepare

Det = Callable[..., Result]
FakeMaster = Any  # conftest.FakeMasterTransport (conftest is not importable)

SCRIPT = """#!/bin/bash
#SBATCH --job-name=from-script
#SBATCH --time=1 --ntasks=1
#SBATCH -p debug
srun hostname
"""


def task(state: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {"task": {"id": 3, "job_id": "812", "state": state, "name": "n", **extra}}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "job.sh").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    for name in ("SBATCH_TIMELIMIT", "SBATCH_PARTITION", "SBATCH_JOB_NAME", "SBATCH_EXPORT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def sent(fake_master: FakeMaster) -> dict[str, Any]:
    [request] = fake_master.sent("POST", "/tasks")
    body: dict[str, Any] = json.loads(request.content)
    return body


def test_the_command_line_beats_the_environment_beats_the_script(
        det: Det, fake_master: FakeMaster, workdir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SBATCH_TIMELIMIT", "7")
    monkeypatch.setenv("SBATCH_PARTITION", "batch")
    monkeypatch.setenv("MY_SETTING", "kept")
    fake_master.add("POST", "/tasks", task(), status=201)
    result = det("sbatch", "-pshort", "--ntasks=2", "job.sh", "a", "-b")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Submitted batch job 812\n"
    assert "task 3 (det task logs 3 -f)" in result.stderr
    body = sent(fake_master)
    assert body["options"] == [["job-name", "from-script"], ["time", "7"], ["partition", "short"],
                               ["ntasks", "2"]]
    assert (body["script"], body["script_name"], body["args"]) == (SCRIPT, "job.sh", ["a", "-b"])
    assert body["cwd"] == str(workdir) and body["wrap"] is None
    assert body["environment"]["MY_SETTING"] == "kept"
    assert not any(name.startswith(("SBATCH_", "SLURM_")) for name in body["environment"])


def test_parsable_prints_only_the_job_id(det: Det, fake_master: FakeMaster,
                                         workdir: Path) -> None:
    fake_master.add("POST", "/tasks", task(), status=201)
    result = det("sbatch", "--parsable", "--wrap", "echo hi")
    assert result.stdout == "812\n"
    body = sent(fake_master)
    assert (body["script"], body["wrap"], body["script_name"]) == (None, "echo hi", "wrap")
    assert body["options"] == []


def test_wait_exits_with_the_jobs_exit_code(det: Det, fake_master: FakeMaster,
                                            workdir: Path) -> None:
    fake_master.add("POST", "/tasks", task(), status=201)
    fake_master.add("GET", "/tasks/3", task("RUNNING"), task("ERROR", exit_code=4))
    result = det("sbatch", "-W", "-Q", "job.sh")
    assert result.exit_code == 4 and result.stderr == ""
    assert exit_status({"state": "COMPLETED", "exit_code": 0}) == 0
    assert exit_status({"state": "CANCELED", "exit_code": 143}) == 1
    assert exit_status({"state": "ERROR", "exit_code": None}) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--array=1-3", "job.sh"], "--array: job arrays are not supported"),
    (["--clusters=other", "job.sh"], "--clusters: the master submits to its own cluster"),
    (["--uid=bob", "job.sh"], "--uid: jobs run as the master's Slurm user"),
    (["--bogus", "job.sh"], "command line: unknown sbatch option --bogus"),
    (["--wrap=x", "job.sh"], "script arguments are not permitted with --wrap"),
    (["missing.sh"], "cannot read the batch script missing.sh"),
    (["--export=NONE,FOO", "job.sh"], "--export=NONE cannot be combined"),
])
def test_refusals_are_one_line_without_a_traceback(det: Det, fake_master: FakeMaster,
                                                   workdir: Path, args: list[str],
                                                   message: str) -> None:
    result = det("sbatch", *args)
    assert result.exit_code == 1
    assert message in result.stderr and "Traceback" not in result.stderr
    assert fake_master.sent("POST", "/tasks") == []


def test_an_array_in_the_script_is_refused_too(det: Det, fake_master: FakeMaster,
                                               workdir: Path) -> None:
    (workdir / "array.sh").write_text("#!/bin/sh\n#SBATCH --array=0-9\necho\n")
    result = det("sbatch", "array.sh")
    assert result.exit_code == 1 and "--array: job arrays are not supported" in result.stderr


def test_a_script_on_standard_input(workdir: Path) -> None:
    prepared = prepare([], {}, str(workdir), lambda: SCRIPT.encode())
    assert prepared.body["script"] == SCRIPT and prepared.body["script_name"] == "sbatch"
    with pytest.raises(Exception, match="the batch script is empty"):
        prepare([], {}, str(workdir), lambda: b"")


def test_the_master_refusal_is_shown_as_its_message(det: Det, fake_master: FakeMaster,
                                                    workdir: Path) -> None:
    fake_master.add_error("POST", "/tasks", 400, "sbatch_refused",
                          "sbatch refused the job: sbatch: error: invalid partition specified")
    result = det("sbatch", "job.sh")
    assert result.exit_code == 1
    assert result.stderr == ("Error: sbatch refused the job: sbatch: error: invalid partition "
                             "specified\n")


def test_a_stray_word_and_pbs_lines_are_warned_about(workdir: Path) -> None:
    (workdir / "odd.sh").write_text("#!/bin/sh\n#PBS -l nodes=2\n#SBATCH -N 1 two -t 5\nls\n")
    prepared = prepare(["odd.sh"], {}, str(workdir), lambda: None)
    assert prepared.body["options"] == [["nodes", "1"]]
    assert prepared.warnings == [
        "odd.sh line 3: sbatch stops reading #SBATCH options at 'two'; the options after it "
        "are ignored",
        "the script's #PBS lines are ignored: det sbatch reads #SBATCH lines only "
        "(--ignore-pbs silences this)"]
    quiet = prepare(["--ignore-pbs", "odd.sh"], {}, str(workdir), lambda: None)
    assert len(quiet.warnings) == 1


def test_export_forms() -> None:
    environ = {"PATH": "/bin", "EDITOR": "vi", "SLURM_JOB_ID": "5", "DET_PASS": "secret",
               "SHELLOPTS": "braceexpand",
               "DET_MASTER": "m:8080", "LINES": "a\nb", "BASH_FUNC_f%%": "() { :; }"}
    warnings: list[str] = []
    everything = export_environment([], environ, "/", warnings)
    assert everything == {"PATH": "/bin", "EDITOR": "vi", "DET_MASTER": "m:8080"}
    assert warnings == ["not exported to the job (the value holds a line break): LINES"]
    listed = export_environment([("export", "EDITOR,ARG=1")], environ, "/", [])
    assert listed == {"EDITOR": "vi", "ARG": "1"}
    with_all = export_environment([("export", "ALL,EDITOR=emacs,NEW=2")], environ, "/", [])
    assert with_all["EDITOR"] == "vi" and with_all["NEW"] == "2"  # man sbatch: ALL wins
    assert export_environment([("export", "NONE")], environ, "/", []) is None


def test_export_file_and_nodefile(workdir: Path) -> None:
    (workdir / "vars").write_text("A=1\x00B=two words\x00")
    (workdir / "hosts").write_text("node1\nnode2 node3\n")
    prepared = prepare(["--export-file=vars", "-F", "hosts", "--export=NONE2", "job.sh"],
                       {"NONE2": "x"}, str(workdir), lambda: None)
    assert prepared.body["environment"] == {"NONE2": "x", "A": "1", "B": "two words"}
    assert ["nodelist", "node1,node2,node3"] in prepared.body["options"]


def test_test_only_prints_what_would_run(det: Det, fake_master: FakeMaster,
                                         workdir: Path) -> None:
    fake_master.add("POST", "/tasks", {"test_only": True, "script": "#!/bin/bash\n",
                                       "argv": ["sbatch", "--job-name=a b", "x.sh"],
                                       "pool": "debug", "account": None, "workdir": "/w"})
    result = det("sbatch", "--test-only", "job.sh")
    assert result.exit_code == 0
    assert "nothing was submitted" in result.stdout
    assert "sbatch '--job-name=a b' x.sh" in result.stdout
    assert sent(fake_master)["test_only"] is True


def test_help_usage_and_version_need_no_master(det: Det, fake_master: FakeMaster) -> None:
    assert "Usage: det sbatch [SBATCH OPTIONS] SCRIPT [ARGS]..." in det("sbatch", "-h").stdout
    assert "master's Slurm user" in det("sbatch", "--help").stdout
    assert det("sbatch", "--version").stdout.startswith("det sbatch (hpcdet ")
    assert fake_master.requests == []


TASKS = {"tasks": [
    {"id": 2, "name": "train", "state": "QUEUED", "job_id": "901", "pool": "debug",
     "queue_position": 3, "reason": "Priority", "owner": "alice", "exit_code": None,
     "submitted_at": "2024-05-01T12:00:00+00:00", "ended_at": None},
    {"id": 1, "name": "prep", "state": "ERROR", "job_id": "900", "pool": None,
     "partition": "batch", "queue_position": None, "reason": None, "owner": "bob",
     "exit_code": 2, "submitted_at": "2024-05-01T11:00:00+00:00",
     "ended_at": "2024-05-01T11:05:00+00:00"}], "total": 2}


def test_task_list_shows_pool_position_and_why(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks", TASKS)
    out = det("task", "list").stdout
    header, _, queued, failed = out.splitlines()
    assert header.split() == ["ID", "Name", "State", "Slurm", "job", "Pool", "Position", "Note",
                              "Owner", "Submitted", "Ended"]
    assert queued.split()[:6] == ["2", "train", "QUEUED", "901", "debug", "3"]
    assert "exit code 2" in failed and "batch" in failed
    assert json.loads(det("task", "list", "--json").stdout)["total"] == 2


def test_task_describe_and_kill(det: Det, fake_master: FakeMaster) -> None:
    detail = task("RUNNING", pool="debug", options=[["time", "5"], ["hold", None]],
                  history=[{"from": None, "to": "QUEUED", "at": None, "cause": "submitted",
                            "actor": "alice"}])
    fake_master.add("GET", "/tasks/3", detail)
    out = det("task", "describe", "3").stdout
    assert out.startswith("Task 3 (n): RUNNING\n")
    assert "--time=5 --hold" in out and "State history:" in out
    fake_master.add("POST", "/tasks/3/kill", task("STOPPING_KILLED"))
    assert det("task", "kill", "3").stdout == "Killing task 3 (Slurm job 812): STOPPING_KILLED\n"


def test_task_logs_follow_both_streams(det: Det, fake_master: FakeMaster) -> None:
    fake_master.add("GET", "/tasks/3", task("RUNNING", log_streams=["output", "error"]))

    def chunk(request: httpx.Request) -> dict[str, Any]:
        stream, offset = request.url.params["stream"], int(request.url.params["offset"])
        text = {"output": "line 1\nline 2\n", "error": "oops\n"}[stream]
        state = "COMPLETED" if offset else "RUNNING"
        return {"text": text[offset:], "next_offset": len(text), "size": len(text),
                "state": state}

    fake_master.add("GET", "/tasks/3/logs", chunk)
    result = det("task", "logs", "3", "-f")
    assert result.exit_code == 0
    assert (result.stdout, result.stderr) == ("line 1\nline 2\n", "oops\n")
    tail = fake_master.sent("GET", "/tasks/3/logs")
    assert det("task", "logs", "3", "--tail", "1").exit_code == 0
    assert fake_master.sent("GET", "/tasks/3/logs")[len(tail)].url.params["tail"] == "1"


def test_det_workspace_shares_the_task_with_a_workspace(
        det: Det, fake_master: FakeMaster, workdir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DET_WORKSPACE", "team")
    fake_master.add("POST", "/tasks", task(), status=201)
    assert det("sbatch", "--wrap", "echo hi").exit_code == 0
    body = sent(fake_master)
    assert body["workspace"] == "team" and "DET_WORKSPACE" not in body["environment"]
