"""`kcoord share-groups`' option checks (ShareGroupCommandOptions.checkArgs, in Kafka 4.3.1's words) and
its --by-duration parser: usage errors are one line with exit status 2, before any connection."""

from __future__ import annotations

import argparse

import pytest

from kcoord.client_cli.share_groups import main
from kcoord.client_cli.share_groups_args import parse_duration

SERVER = ("--bootstrap-server", "127.0.0.1:1")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--describe"], "Option [describe|delete] takes one of these options: [all-groups], [group]"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--dry-run"],
         "Option [reset-offsets] takes one of these options: [to-datetime], [to-earliest], [to-latest]"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--to-latest"],
         "Option [reset-offsets] takes the option: [execute] or [dry-run]"),
        (["--reset-offsets", "--group", "g", "--to-latest", "--execute"],
         "Option [reset-offsets] takes one of these options: [all-topics], [topic]"),
        (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options"),
        (["--list", "--members"], "Option [members|offsets|verbose] can be used with [describe] only"),
        (["--list", "--state", "Rebalancing"], "Invalid state list 'Rebalancing'"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_with_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*SERVER, *argv])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("text", "ms"), [("PT1H", 3_600_000), ("P1DT2H30M", 95_400_000), ("PT0.5S", 500), ("p2d", 172_800_000)]
)
def test_durations_are_iso_8601(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "1H", "PT1X", ""])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)
