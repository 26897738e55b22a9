"""The slurmrestd client against the dev cluster's Slurm 25.11: the data_parser version,
JWTs from scontrol (renewed before they expire) and from a file (read again when it
changes), and what goes wrong as the dispatcher's errors, never with a token in them."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hpcdet.dispatcher.commands import CommandRunner
from hpcdet.dispatcher.slurm.rest.client import SlurmRestClient
from hpcdet.dispatcher.slurm.rest.tokens import FileTokens, ScontrolTokens, parse_token
from hpcdet.dispatcher.transport import TransportUnavailableError
from hpcdet.errors import SchedulerError

pytestmark = [pytest.mark.slurm, pytest.mark.slurm2511]


@pytest.fixture
def make_client() -> Iterator[Callable[..., SlurmRestClient]]:
    """SlurmRestClient(...), each closed after the test."""
    made: list[SlurmRestClient] = []

    def make(*args: Any, **kwargs: Any) -> SlurmRestClient:
        made.append(SlurmRestClient(*args, **kwargs))
        return made[-1]

    yield make
    for client in made:
        client.close()


def mint(lifespan: int = 600) -> str:
    out = subprocess.run(["scontrol", "token", f"lifespan={lifespan}"], capture_output=True,
                         text=True, check=True).stdout
    return parse_token(out, "scontrol token")


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_the_client_reads_v0044_and_counts_its_requests(
        slurmrestd: str, make_client: Callable[..., SlurmRestClient]) -> None:
    client = make_client(slurmrestd, ScontrolTokens(CommandRunner(), 600), "root")
    assert client.version == "v0.0.44"
    before = client.count
    reply = client.get(client.slurm("diag/"))
    assert reply["statistics"] and client.count == before + 1


def test_scontrol_tokens_are_renewed_before_they_expire(
        slurmrestd: str, make_client: Callable[..., SlurmRestClient]) -> None:
    """A 10-second token is renewed after 8 seconds: requests keep succeeding across it."""
    tokens = ScontrolTokens(CommandRunner(), 10)
    client = make_client(slurmrestd, tokens, "root")
    client.get(client.slurm("diag/"))
    first = tokens.token()
    assert tokens.renewals == 1

    def renewed() -> bool:
        client.get(client.slurm("diag/"))  # raises if slurmrestd refused a token
        return tokens.renewals == 2

    wait_for(renewed, 20, "a renewed token")
    assert tokens.token() != first


def test_a_token_file_is_read_again_when_it_changes(
        slurmrestd: str, tmp_path: Path, make_client: Callable[..., SlurmRestClient]) -> None:
    path = tmp_path / "jwt"
    path.write_text(f"SLURM_JWT={mint()}\n")
    path.chmod(0o600)
    tokens = FileTokens(str(path))
    client = make_client(slurmrestd, tokens, "root")
    client.get(client.slurm("diag/"))
    client.get(client.slurm("diag/"))
    assert tokens.renewals == 1  # unchanged: not read again
    new = mint()
    path.write_text(new + "\n")  # a bare token is accepted too
    client.get(client.slurm("diag/"))
    assert tokens.renewals == 2 and tokens.token() == new
    path.chmod(0o644)
    with pytest.raises(TransportUnavailableError) as caught:
        client.get(client.slurm("diag/"))
    assert "can be read by others (mode 0644)" in str(caught.value)
    assert new not in str(caught.value)


def test_a_refused_token_is_a_scheduler_error_without_the_token(
        slurmrestd: str, tmp_path: Path, make_client: Callable[..., SlurmRestClient]) -> None:
    path = tmp_path / "jwt"
    forged = mint()[:-4] + "AAAA"
    path.write_text(forged)
    path.chmod(0o600)
    client = make_client(slurmrestd, FileTokens(str(path)), "root")
    with pytest.raises(SchedulerError) as caught:
        client.get(client.slurm("diag/"))
    assert type(caught.value) is SchedulerError
    assert "refused the token of user root" in str(caught.value)
    assert forged not in str(caught.value) and forged[:20] not in repr(caught.value.args)


def test_slurm_errors_carry_slurms_message(
        slurmrestd: str, make_client: Callable[..., SlurmRestClient]) -> None:
    client = make_client(slurmrestd, ScontrolTokens(CommandRunner(), 600), "root")
    job = subprocess.run(["sbatch", "--parsable", "-H", "-J", "hpcdet-rest-err", "-o",
                          "/dev/null", "--wrap", "true"], capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        with pytest.raises(SchedulerError, match="Invalid qos specification"):
            client.post(client.slurm(f"job/{job}"), {"qos": "no-such-qos"})
    finally:
        subprocess.run(["scancel", job], check=False)


def test_an_unreachable_slurmrestd_is_transport_unavailable(
        make_client: Callable[..., SlurmRestClient]) -> None:
    client = make_client("http://127.0.0.1:9", ScontrolTokens(CommandRunner(), 600), "root",
                             timeout=2)
    client._version = "v0.0.44"  # no server to ask
    if os.geteuid() != 0:
        pytest.skip("minting a token needs root")
    with pytest.raises(TransportUnavailableError, match="cannot be reached: ConnectError"):
        client.get(client.slurm("diag/"))
