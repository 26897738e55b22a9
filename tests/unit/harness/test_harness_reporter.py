"""The batched metrics reporter, against a fake master on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hang_guard import wait_until
from harness_fakes import TOKEN, FakeMaster

import hpcdet.core
from hpcdet.client import MasterClient
from hpcdet.core._reporter import Backoff, MetricsReporter
from hpcdet.errors import MasterError

FAST = Backoff(initial=0.01, maximum=0.05)


@pytest.fixture
def client(fake_master: FakeMaster) -> Iterator[MasterClient]:
    with MasterClient(fake_master.url, token=TOKEN) as master_client:
        yield master_client


def _reporter(client: MasterClient, **options: object) -> MetricsReporter:
    settings: dict[str, object] = {"flush_interval": 60.0, "backoff": FAST, **options}
    return MetricsReporter(client, 11, **settings)  # type: ignore[arg-type]


def _wait_until(condition: Callable[[], bool]) -> None:
    """Wait for the reporter thread to get somewhere (a hang fails, not a slow machine)."""
    wait_until(condition, "the reporter thread's step")


def test_close_flushes_everything_in_one_post_per_group(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    reporter = _reporter(client)
    for step in range(1, 6):
        reporter.report("training", step, {"loss": 1.0 / step})
    reporter.report("validation", 5, {"accuracy": 0.5})
    reporter.close()
    assert len(fake_master.metric_posts("training")) == 1
    assert len(fake_master.metric_posts("validation")) == 1
    assert [r["steps_completed"] for r in fake_master.reports("training")] == [1, 2, 3, 4, 5]
    assert fake_master.reports("validation") == [
        {"steps_completed": 5, "metrics": {"accuracy": 0.5}}
    ]


def test_a_full_batch_is_sent_without_waiting_for_the_interval(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    reporter = _reporter(client, batch_size=3)
    for step in range(1, 4):
        reporter.report("training", step, {"loss": 1.0})
    _wait_until(lambda: len(fake_master.metric_posts()) == 1)
    reporter.report("training", 4, {"loss": 1.0})
    reporter.close()
    sizes = [len(post["reports"]) for post in fake_master.metric_posts()]
    assert sizes == [3, 1]


def test_reports_are_sent_after_the_flush_interval(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    reporter = _reporter(client, flush_interval=0.05)
    reporter.report("training", 1, {"loss": 1.0})
    _wait_until(lambda: len(fake_master.metric_posts()) == 1)
    reporter.close()
    assert len(fake_master.reports("training")) == 1


def test_retries_after_503_without_losing_data(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    fake_master.fail_next = [503, 503]
    reporter = _reporter(client)
    reporter.report("training", 1, {"loss": 1.0})
    reporter.close()
    assert fake_master.attempts == 3
    assert fake_master.reports("training") == [{"steps_completed": 1, "metrics": {"loss": 1.0}}]


def test_a_full_queue_blocks_the_caller_instead_of_dropping(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    fake_master.fail_next = [503] * 3
    reporter = _reporter(client, batch_size=1, max_pending=2)
    for step in range(1, 11):
        reporter.report("training", step, {"loss": 1.0})
    reporter.close()
    assert [r["steps_completed"] for r in fake_master.reports("training")] == list(range(1, 11))


def test_flush_waits_until_the_master_has_the_reports(
    client: MasterClient, fake_master: FakeMaster
) -> None:
    reporter = _reporter(client)
    reporter.report("validation", 3, {"accuracy": 0.7})
    reporter.flush()
    assert len(fake_master.reports("validation")) == 1
    reporter.close()


def test_a_permanent_error_is_raised_to_the_caller(
    client: MasterClient, fake_master: FakeMaster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_master.fail_next = [400]
    reporter = _reporter(client)
    reporter.report("training", 1, {"loss": 1.0})
    with pytest.raises(MasterError, match="reporting metrics to the master failed"):
        reporter.flush()
    with pytest.raises(MasterError):
        reporter.report("training", 2, {"loss": 1.0})
    with pytest.raises(MasterError):
        reporter.close()
    assert fake_master.attempts == 1  # not retried
    assert "dropped 1 training metric report(s)" in capsys.readouterr().err


def test_close_gives_up_on_a_master_that_stays_down(
    client: MasterClient, fake_master: FakeMaster, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_master.fail_next = [503] * 100_000
    reporter = _reporter(client)
    reporter.report("training", 1, {"loss": 1.0})
    with pytest.raises(MasterError, match="scripted failure 503"):
        reporter.close(timeout=0.2)
    assert "dropped 1 training metric report(s)" in capsys.readouterr().err


def test_report_after_close_is_an_error(client: MasterClient) -> None:
    reporter = _reporter(client)
    reporter.close()
    reporter.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        reporter.report("training", 1, {"loss": 1.0})


@pytest.mark.usefixtures("in_job")
def test_core_in_a_job_ships_through_the_reporter(fake_master: FakeMaster) -> None:
    with hpcdet.core.init() as core:
        assert type(core.train) is hpcdet.core.TrainContext
        assert (core.info.trial_id, core.info.experiment_id, core.info.in_job) == (11, 7, True)
        assert core.info.master_url == fake_master.url
        assert core.info.hparams == {"lr": 0.1}
        core.train.report_training_metrics(1, {"loss": 2.0})
        core.train.report_training_metrics(2, {"loss": 1.0})
        core.train.report_validation_metrics(2, {"accuracy": 0.5})
    assert [r["steps_completed"] for r in fake_master.reports("training")] == [1, 2]
    assert fake_master.reports("validation") == [
        {"steps_completed": 2, "metrics": {"accuracy": 0.5}}
    ]


@pytest.mark.usefixtures("in_job")
def test_a_context_left_open_is_flushed_by_close_open_contexts(fake_master: FakeMaster) -> None:
    from hpcdet.core._context import close_open_contexts

    core = hpcdet.core.init()
    core.train.report_training_metrics(1, {"loss": 2.0})
    close_open_contexts()  # what the harness does after the entrypoint returns
    assert len(fake_master.reports("training")) == 1
