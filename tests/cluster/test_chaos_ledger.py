"""bench/chaos_verify.py's event files are read on from where the last read stopped (the checks after
each fault re-parsed every file from its start): what is read is still every complete line, a torn
last line only once it is complete, and the ledger's answers are the same as from one full read."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.chaos_verify import Ledger, RecordCheck, check_records, events


def test_events_are_read_on_and_a_torn_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "producer.jsonl"
    assert list(events(path)) == []  # not written yet
    path.write_text('{"acked": 0, "p": 1, "o": 5}\n{"acked": 1, "p": 1, ')
    assert list(events(path)) == [{"acked": 0, "p": 1, "o": 5}]
    with path.open("a") as file:
        file.write('"o": 6}\nnot json\n{"error": "x"}\n')
    assert list(events(path)) == [{"acked": 0, "p": 1, "o": 5}, {"acked": 1, "p": 1, "o": 6}, {"error": "x"}]
    ledger = Ledger(produce_files=[path])
    assert ledger.produced() == {(1, 5): "0", (1, 6): "1"} and ledger.count_errors() == 1
    with path.open("a") as file:
        file.write(json.dumps({"acked": 2, "p": 0, "o": 0}) + "\n")
    assert ledger.produced() == {(1, 5): "0", (1, 6): "1", (0, 0): "2"}


def test_commit_and_transaction_answers_fold_in_only_what_is_new(tmp_path: Path) -> None:
    commits, txns = tmp_path / "chaos-classic.jsonl", tmp_path / "txn.jsonl"
    commits.write_text('{"assigned": [3, 4]}\n{"acked": 1}\n{"acked": 2}\n')
    txns.write_text('{"committed": ["a", "b"]}\n{"aborted": ["c"], "unknown": ["c"]}\n')
    ledger = Ledger(commit_files={"chaos-classic": (commits, "t")}, txn_files=[txns])
    assert ledger.last_commits() == {("chaos-classic", "t", 3): 2} and ledger.acked_commits() == 2
    with commits.open("a") as file:
        file.write('{"assigned": [5]}\n{"acked": 7}\n{"error": "e"}\n')
    with txns.open("a") as file:
        file.write('{"committed": ["d"]}\n')
    assert ledger.last_commits() == {("chaos-classic", "t", 3): 7} and ledger.acked_commits() == 3
    assert ledger.transactions() == ({"a", "b", "d"}, {"c"}, {"c"}) and ledger.count_errors() == 1


Key = tuple[int, int]
_keys = st.tuples(st.integers(0, 2), st.integers(0, 12))
_steps = st.lists(
    st.tuples(st.dictionaries(_keys, st.sampled_from("abcdef"), max_size=6),
              st.dictionaries(_keys, st.sampled_from("abcdef"), max_size=6)),
    max_size=8,
)  # fmt: skip


@given(_steps)
@settings(max_examples=200, deadline=None)
def test_the_record_check_kept_up_to_date_answers_as_a_check_of_everything(
    steps: list[tuple[dict[Key, str], dict[Key, str]]],
) -> None:
    # Each step: records acknowledged, then records read (new, or read again with another value after
    # a reset); after each, the kept check equals check_records over everything so far.
    check, acked, read = RecordCheck(), {}, {}
    for new_acks, new_reads in steps:
        acked.update(new_acks)
        changes = {key: read.get(key) for key, value in new_reads.items() if read.get(key) != value}
        read.update(new_reads)
        assert check.update(acked, list(new_acks), read, changes) == check_records(acked, read)
