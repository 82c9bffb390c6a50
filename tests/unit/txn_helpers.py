"""Drive transactional offsets on a unit-test Harness: TxnOffsetCommit and the group coordinator's
marker (GroupManager.txn_offset_commit / complete_transaction), typed as the server calls them."""

from __future__ import annotations

from typing import Any

from kcoord.coordinator.groups.errors import ErrorCode
from kcoord.coordinator.groups.txn_offset_api import TxnCommitRequest, TxnPartition
from tests.unit.conftest import Harness


class Answer:
    """A callback that records its one answer."""

    def __init__(self) -> None:
        self.answers: list[Any] = []

    def __call__(self, answer: Any) -> None:
        assert not self.answers, f"answered twice: {self.answers[0]} then {answer}"
        self.answers.append(answer)

    @property
    def done(self) -> bool:
        return bool(self.answers)

    @property
    def value(self) -> Any:
        assert self.answers, "not answered"
        return self.answers[0]

    def errors(self) -> dict[tuple[str, int], ErrorCode]:
        return {(t, p): e for t, p, e in self.value}


def txn_commit(
    h: Harness,
    offsets: dict[tuple[str, int], int],
    *,
    pid: int = 1,
    epoch: int = 0,
    group: str = "g",
    generation: int = -1,
    member_id: str = "",
    iid: str | None = None,
    metadata: str | None = "m",
) -> Answer:
    answer = Answer()
    partitions = [TxnPartition(t, p, off, 2, metadata) for (t, p), off in offsets.items()]
    request = TxnCommitRequest(f"txn-{pid}", group, pid, epoch, generation, member_id, iid, partitions)
    h.mgr.txn_offset_commit(request, answer)
    return answer


def complete(h: Harness, pid: int = 1, commit: bool = True, epoch: int = 0) -> Answer:
    answer = Answer()
    h.mgr.complete_transaction(pid, epoch, commit, answer)
    return answer


def fetched(
    h: Harness, topics: dict[str, list[int]] | None, *, group: str = "g", stable: bool = False
) -> Any:
    """{(topic, partition): committed offset or error code} from an OffsetFetch v8."""
    reply = h.fetch(topics, group=group, version=8, require_stable=stable)
    assert reply.done
    (result,) = reply["groups"]
    out = {}
    for topic in result["topics"]:
        for p in topic["partitions"]:
            key = (topic["name"], p["partition_index"])
            out[key] = p["error_code"] if p["error_code"] else p["committed_offset"]
    return out
