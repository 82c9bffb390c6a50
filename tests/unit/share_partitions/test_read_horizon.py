"""A share fetch reads the log only as far as acquisition can reach (SharePartitions.read_horizon): two
tenants driven alike, one handed every batch from the next fetch offset on (as a read up to a large
`max_bytes` returns them), the other only the batches through the read horizon (as the edge reads,
kcoord/broker/share/fetch.py), must acquire the same ranges, answer the same acknowledgements and
hold the same states, whatever the batch sizes, gaps in the log (compaction), limits and modes."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kcoord.coordinator.share_partitions import AcquiredRange, RecordState
from tests.unit.share_partitions.conftest import GROUP, SETTINGS, TOPIC, Share, bounds, make_share

END = 40
MEMBERS = ("m1", "m2")
LIMITS = SETTINGS.__class__(1000, 4, 12, "earliest", 0)  # a small window: the in-flight cap matters too


def _log(sizes: list[int], gaps: list[bool]) -> list[tuple[int, int]]:
    """Batches of the given sizes from offset 0, some of them gone (a compacted log's holes)."""
    batches, base = [], 0
    for size, gone in zip(sizes, gaps, strict=False):
        if base >= END:
            break
        last = min(base + size, END) - 1
        if not gone:
            batches.append((base, last))
        base = last + 1
    return batches


def _fetch(share: Share, member: str, limits: tuple[int, int, bool], bounded: bool) -> list[AcquiredRange]:
    max_records, batch_size, strict = limits
    offset = share.next_offset(bounds(0, END))
    if offset is None:
        return []
    read = [b for b in share.batches if b[1] >= offset]
    if bounded and read:  # as ShareFetchPart._read: up to the first batch reaching the horizon
        horizon = share.tenant.read_horizon(GROUP, TOPIC, 0, offset, max_records)
        horizon = max(horizon, share.tenant.read_horizon(GROUP, TOPIC, 0, read[0][0], max_records))
        read = [b for i, b in enumerate(read) if i == 0 or read[i - 1][1] < horizon]
    return share.tenant.acquire(
        GROUP, member, TOPIC, 0, share.settings, read, max_records, batch_size, strict
    )


class TwinReads(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.full = make_share(settings=LIMITS)
        self.bounded = make_share(settings=LIMITS)

    @initialize(sizes=st.lists(st.integers(1, 7), min_size=12, max_size=12),
                gaps=st.lists(st.booleans(), min_size=12, max_size=12))  # fmt: skip
    def lay_out_the_log(self, sizes: list[int], gaps: list[bool]) -> None:
        gaps = [g and i % 3 == 1 for i, g in enumerate(gaps)]  # a hole now and then, never the first batch
        self.full.batches = self.bounded.batches = _log(sizes, gaps)

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 9), strict=st.booleans(),
          batch_size=st.integers(1, 6))  # fmt: skip
    def fetch(self, member: str, max_records: int, strict: bool, batch_size: int) -> None:
        got = _fetch(self.full, member, (max_records, batch_size, strict), bounded=False)
        assert _fetch(self.bounded, member, (max_records, batch_size, strict), bounded=True) == got

    @precondition(lambda self: self.full.tenant.describe(GROUP, TOPIC, 0) is not None)
    @rule(data=st.data(), kind=st.sampled_from((1, 2, 3)))
    def acknowledge(self, data: st.DataObject, kind: int) -> None:
        held = [(o, s[2]) for o, s in self.full.states().items() if s[0] is RecordState.ACQUIRED]
        if not held:
            return
        offset, member = data.draw(st.sampled_from(held))
        assert member is not None
        assert self.bounded.ack(member, (offset, offset, [kind])) == self.full.ack(
            member, (offset, offset, [kind])
        )

    @rule()
    def locks_expire(self) -> None:
        for share in (self.full, self.bounded):
            share.timers.advance(1000)

    @rule(member=st.sampled_from(MEMBERS))
    def member_leaves(self, member: str) -> None:
        for share in (self.full, self.bounded):
            share.tenant.release_member(GROUP, member)

    @invariant()
    def same_states(self) -> None:
        full, bounded = (s.tenant.describe(GROUP, TOPIC, 0) for s in (self.full, self.bounded))
        assert full == bounded


def test_a_read_through_the_horizon_acquires_what_a_read_of_everything_does() -> None:
    run_state_machine_as_test(
        TwinReads, settings=settings(max_examples=150, stateful_step_count=25, deadline=None, database=None)
    )
