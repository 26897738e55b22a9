"""master.yaml loading: defaults, environment overrides, errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcdet.errors import ConfigError
from hpcdet.master.settings.core import load_settings


def test_defaults_use_sqlite_in_the_state_dir(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(f"state_dir: {tmp_path}\n")
    settings = load_settings(path, environ={})
    assert settings.db_url == f"sqlite:///{tmp_path / 'hpcdet.sqlite'}"
    assert settings.database_kind == "sqlite"
    assert settings.resource_manager.container_run_type == "none"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("db: {url: 'sqlite:///x.db'}\nport: 9000\n")
    env = {"HPCDET_DB_URL": "postgresql+psycopg2://u@h/db", "HPCDET_MASTER_PORT": "9100"}
    settings = load_settings(path, environ=env)
    assert settings.database_kind == "postgresql" and settings.port == 9100


def test_every_bad_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("port: http\nbogus: 1\nresource_manager:\n  container_run_type: docker\n"
                    "  slot_type: gpu\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert info.value.errors == [
        "<master.yaml>.bogus: unknown key (known: auth, checkpoint_storage, db, host, "
        "metrics, metrics_retention, port, reconciler, resource_manager, security, state_dir, "
        "webserver)",
        "<master.yaml>.port: must be an integer from 1 to 65535, got 'http'",
        "<master.yaml>.resource_manager.container_run_type: must be one of apptainer, "
        "singularity, enroot, podman, charliecloud, none, got 'docker'",
        "<master.yaml>.resource_manager.slot_type: must be one of cpu, cuda, rocm, got 'gpu'",
    ]


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("port: 8080\n  host: [x\n")
    with pytest.raises(ConfigError, match=r"master.yaml:2:7"):
        load_settings(path, environ={})


_SCHEDULING = """
resource_manager:
  tres_supported: false
  default_aux_resource_pool: debug
  job_project_source: label:team-
  task_container_defaults: {slurm: {sbatch_args: [--mem-per-cpu=500M]}}
  partition_overrides:
    Batch:
      description: all nodes
      slot_type: cuda
      task_container_defaults: {slurm: {gpu_type: a100, sbatch_args: [--constraint=fast]}}
      priority_bands: [{priorities: 1-99, qos: normal}]
  resource_pools:
    - pool_name: gpu-only
      provider: {type: hpc, partition: batch}
      task_container_defaults: {slurm: {sbatch_args: [--exclude=node1]}}
  priority:
    nice_step: 10
    bands:
      - {priorities: 1-20, qos: high}
      - {priorities: 21-60, qos: normal}
      - {priorities: 61-99, qos: low, partition: debug}
  fair_share: {weights: {team-a: 3, team-b: 1}, parent_account: hpcdet}
"""


def test_scheduling_keys_are_read(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text(_SCHEDULING)
    rm = load_settings(path, environ={}).resource_manager
    assert (rm.tres_supported, rm.gres_supported, rm.slot_type) == (False, True, None)
    assert rm.default_aux_resource_pool == "debug" and rm.job_project_source == "label:team-"
    batch = rm.partition_overrides["batch"]
    assert batch.slot_type == "cuda" and batch.slurm.gpu_type == "a100"
    assert rm.slurm_defaults.then(batch.slurm).sbatch_args == ("--mem-per-cpu=500M",
                                                               "--constraint=fast")
    assert rm.resource_pools[0].partition == "batch"
    assert [(b.low, b.high, b.qos, b.partition) for b in rm.priority.bands] == [
        (1, 20, "high", None), (21, 60, "normal", None), (61, 99, "low", "debug")]
    assert rm.fair_share is not None and rm.fair_share.weight_of("team-a") == 3.0
    assert rm.fair_share.weight_of("someone") == 1.0 and rm.fair_share.manage_accounts == "auto"


def test_scheduling_errors_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("""
resource_manager:
  job_project_source: team
  task_container_defaults: {slurm: {sbatch_args: [--partition=x]}}
  resource_pools: [{pool_name: p}]
  priority: {bands: [{priorities: 1-50, qos: a}, {priorities: 40-99, qos: b}]}
  fair_share: {weights: {x: 0}, account_prefix: Det, manage_accounts: sometimes}
""")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    text = "\n".join(info.value.errors)
    rm = "<master.yaml>.resource_manager"
    assert f"{rm}.job_project_source: must be project, workspace or label[:prefix]" in text
    assert f"{rm}.task_container_defaults.slurm.sbatch_args[0]: option --partition" in text
    assert f"{rm}.resource_pools[0].provider.partition: is required" in text
    assert f"{rm}.priority.bands[1]: priority 40 is already in {rm}.priority.bands[0]" in text
    assert f"{rm}.fair_share.weights.x: must be a number > 0" in text
    assert f"{rm}.fair_share.account_prefix: must be lower-case" in text
    assert f"{rm}.fair_share.manage_accounts: must be auto, true or false" in text


def test_bands_must_cover_every_priority(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("resource_manager:\n  priority:\n    bands: [{priorities: 2-50}, "
                    "{priorities: 60-98}]\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert info.value.errors == ["<master.yaml>.resource_manager.priority.bands: the bands "
                                 "must cover priorities 1-99; missing 1, 51-59, 99"]


PBS_WITH_SLURM_POLICIES = """\
resource_manager:
  type: pbs
  priority: {bands: [{priorities: 1-50, qos: low}, {priorities: 51-99}]}
  partition_overrides:
    workq: {priority_bands: [{priorities: 1-99, qos: normal}]}
  resource_pools:
    - {pool_name: small, provider: {partition: workq}, priority_bands: [{priorities: 1-99}]}
    - {pool_name: big, provider: {partition: workq},
       priority_bands: [{priorities: 1-99, qos: big}]}
  fair_share: {manage_accounts: true}
"""


def test_a_pbs_master_refuses_what_pbs_cannot_honour(tmp_path: Path) -> None:
    """QOS and managed accounts are refused when master.yaml is read, each with its place
    and the plug-in's reason, not at the first submission or in the fair-share log."""
    path = tmp_path / "master.yaml"
    path.write_text(PBS_WITH_SLURM_POLICIES)
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    rm = "<master.yaml>.resource_manager"
    assert sorted(info.value.errors) == [
        f"{rm}.fair_share.manage_accounts: hpcdet does not manage pbs fair-share accounts: "
        "the site's administrator keeps them (PBS: sched_priv/resource_group); hpcdet passes "
        "each job's account (set it to false or auto)",
        f"{rm}.partition_overrides.workq.priority_bands[0].qos: PBS has no QOS",
        f"{rm}.priority.bands[0].qos: PBS has no QOS",
        f"{rm}.resource_pools[1].priority_bands[0].qos: PBS has no QOS",
    ]
    # The same policies are Slurm's to honour.
    path.write_text(PBS_WITH_SLURM_POLICIES.replace("type: pbs", "type: slurm"))
    assert load_settings(path, environ={}).resource_manager.fair_share is not None


def test_security_storage_roots_and_max_body_mb(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("security: {storage_roots: [/srv/ckpt, /scratch/../data], max_body_mb: 8}\n")
    settings = load_settings(path, environ={})
    assert settings.hardening.storage_roots == ("/srv/ckpt", "/data")
    assert settings.hardening.max_body_mb == 8
    path.write_text("security: {storage_roots: [relative], max_body_mb: 0}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert any("storage_roots[0]: must be an absolute path" in e for e in info.value.errors)
    assert any("max_body_mb" in e for e in info.value.errors)


def test_security_run_as_keys(tmp_path: Path) -> None:
    from hpcdet.master.settings.core import load_settings

    assert not load_settings(environ={}).runas.owner_mode
    path = tmp_path / "master.yaml"
    path.write_text("security: {jobs_run_as: owner, runas_helper: /opt/hpcdet-runas}\n")
    runas = load_settings(path, environ={}).runas
    assert (runas.owner_mode, runas.runas_helper) == (True, "/opt/hpcdet-runas")
    path.write_text("security: {jobs_run_as: root, runas_helper: relative}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert len(info.value.errors) == 2
    assert all(e.startswith("<master.yaml>.security.") for e in info.value.errors)


def test_jobs_as_their_owner_need_proven_users(tmp_path: Path) -> None:
    """On an open master anyone can claim any name: running jobs as that name would let
    anyone run jobs as anyone."""
    path = tmp_path / "master.yaml"
    path.write_text("auth: {mode: open, require_user: true}\nsecurity: {jobs_run_as: owner}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert info.value.errors == ["<master.yaml>.security.jobs_run_as: owner needs auth.mode: "
                                 "munge (jobs run as the user MUNGE proves; an open master "
                                 "believes any name)"]


def test_a_root_master_refuses_to_run_jobs_as_their_owners(
        caplog: pytest.LogCaptureFixture) -> None:
    import click

    from hpcdet.master.serve import refuse_root_owner_mode
    from hpcdet.master.settings.core import MasterSettings
    from hpcdet.master.settings.runas import RunAsSettings

    owner = MasterSettings(auth_mode="munge", runas=RunAsSettings(jobs_run_as="owner"))
    with pytest.raises(click.ClickException, match="not root"):
        refuse_root_owner_mode(owner, euid=0)
    refuse_root_owner_mode(owner, euid=1000)  # the service account: fine
    with caplog.at_level("WARNING", logger="hpcdet.master"):
        refuse_root_owner_mode(MasterSettings(), euid=0)
    assert "runs as root" in caplog.text


def _rm(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "master.yaml"
    path.write_text("resource_manager:\n" + "".join(f"  {line}\n" for line in text.splitlines()))
    return path


def test_slurm_api_is_cli_unless_pyslurm_is_asked_for(tmp_path: Path) -> None:
    assert load_settings(_rm(tmp_path, "cluster_name: x"), environ={}).resource_manager \
        .slurm_api == "cli"
    assert load_settings(_rm(tmp_path, "slurm_api: pyslurm"), environ={}).resource_manager \
        .slurm_api == "pyslurm"


@pytest.mark.parametrize(("text", "error"), [
    ("slurm_api: rest", "<master.yaml>.resource_manager.slurm_api: must be one of cli, pyslurm "
     "with <master.yaml>.resource_manager.type: slurm, got 'rest'"),
    ("type: pbs\nslurm_api: pyslurm", "<master.yaml>.resource_manager.slurm_api: must be one "
     "of cli with <master.yaml>.resource_manager.type: pbs, got 'pyslurm'"),
    ("slurm_api: pyslurm\njob_storage_root: /shared/jobs\ntransport: {type: ssh, host: login1, "
     "insecure_accept_new_host_key: true}",
     "<master.yaml>.resource_manager.slurm_api: pyslurm talks to the slurmctld of the master's "
     "own slurm.conf, not through <master.yaml>.resource_manager.transport (type ssh): use "
     "slurm_api: cli with that transport"),
    ("slurm_api: pyslurm\ntransport: {type: rest, url: 'http://127.0.0.1:6820', "
     "token_source: {type: scontrol}}",
     "<master.yaml>.resource_manager.slurm_api: pyslurm talks to the slurmctld of the master's "
     "own slurm.conf, not through <master.yaml>.resource_manager.transport (type rest): use "
     "slurm_api: cli with that transport"),
])
def test_a_slurm_api_that_cannot_work_names_its_keys(tmp_path: Path, text: str,
                                                     error: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_rm(tmp_path, text), environ={})
    assert error in info.value.errors


def test_the_master_refuses_to_start_with_the_backends_problem(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import click

    from hpcdet.master import serve
    from hpcdet.master.scheduling import backend

    cli = load_settings(_rm(tmp_path, f"job_storage_root: {tmp_path}"), environ={})
    # The default builds no backend to ask.
    monkeypatch.setattr(backend, "make_backend", lambda _settings: pytest.fail("built"))
    serve.refuse_unusable_backend(cli)
    monkeypatch.undo()
    line = "resource_manager.slurm_api: pyslurm, but ...: run scripts/build-pyslurm"
    pyslurm = load_settings(_rm(tmp_path, f"slurm_api: pyslurm\njob_storage_root: {tmp_path}"),
                            environ={})
    monkeypatch.setattr(backend, "make_backend",
                        lambda _settings: SimpleNamespace(startup_problem=lambda: line))
    with pytest.raises(click.ClickException) as info:
        serve.refuse_unusable_backend(pyslurm)
    assert info.value.message == line
