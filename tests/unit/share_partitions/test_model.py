"""The state machine against a small model: one dict of offset -> (state, delivery count, member).

Hypothesis drives fetches, acknowledgements (whole-batch and per offset, every type), members leaving
and lock expiry against one share partition; after every step the tenant's records, start offset and
next fetch offset must be the model's. Acquisition is checked, not re-implemented: every record the
tenant hands out must be AVAILABLE (or never fetched) in the model, and then is the member's.
"""

from __future__ import annotations

from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kcoord.coordinator.share_partitions import RecordState
from kcoord.protocol.errors import ErrorCode
from tests.unit.share_partitions.conftest import GROUP, LOCK_MS, Share, log_batches, make_share

AV, ACQ, ACK, ARC = (
    RecordState.AVAILABLE,
    RecordState.ACQUIRED,
    RecordState.ACKNOWLEDGED,
    RecordState.ARCHIVED,
)
LIMIT = 3  # share.delivery.count.limit: small, so archiving at the limit happens
END = 40
MEMBERS = st.sampled_from(["m1", "m2"])
ACK_TO_STATE = {0: ARC, 1: ACK, 3: ARC}


class ShareModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from dataclasses import replace

        from tests.unit.share_partitions.conftest import SETTINGS

        self.share: Share = make_share(
            batches=log_batches(END, size=3), settings=replace(SETTINGS, delivery_count_limit=LIMIT)
        )
        self.model: dict[int, tuple[RecordState, int, str | None]] = {}
        self.start = 0
        self.end = -1  # the last offset ever fetched

    # -- the model's own rules ------------------------------------------------------------------------
    def _advance_start(self) -> None:
        """The start offset passes the leading ACKNOWLEDGED/ARCHIVED records."""
        while self.start <= self.end and self._at(self.start)[0] in (ACK, ARC):
            self.start += 1

    def _at(self, offset: int) -> tuple[RecordState, int, str | None]:
        """Offsets never acquired are AVAILABLE, never delivered."""
        return self.model.get(offset, (AV, 0, None))

    def _release(self, offset: int, decrease: bool) -> None:
        _, count, _ = self.model[offset]
        count -= 1 if decrease else 0
        self.model[offset] = (ARC if count >= LIMIT and not decrease else AV, count, None)

    # -- rules ------------------------------------------------------------------------------------------
    @rule(member=MEMBERS, max_records=st.integers(1, 8), strict=st.booleans(), batch_size=st.integers(1, 8))
    def fetch(self, member: str, max_records: int, strict: bool, batch_size: int) -> None:
        acquired = self.share.fetch(member, max_records, batch_size=batch_size, strict=strict)
        assert acquired is not None  # the window cap (2000) is never reached here
        offsets = [o for r in acquired for o in range(r.first_offset, r.last_offset + 1)]
        if strict:
            assert len(offsets) <= max_records
        for r in acquired:
            for offset in range(r.first_offset, r.last_offset + 1):
                assert offset >= self.start
                state, count, _ = self.model.get(offset, (AV, 0, None))
                assert state is AV, f"acquired {offset} in state {state}"
                assert r.delivery_count == count + 1
                self.model[offset] = (ACQ, count + 1, member)
                self.end = max(self.end, offset)

    @rule(data=st.data(), member=MEMBERS, ack_type=st.sampled_from([0, 1, 2, 3, 4]), per_offset=st.booleans())
    def acknowledge(self, data: st.DataObject, member: str, ack_type: int, per_offset: bool) -> None:
        if self.end < self.start:
            return
        first = data.draw(st.integers(self.start, self.end))
        last = data.draw(st.integers(first, min(self.end, first + 6)))
        types = (
            data.draw(
                st.lists(
                    st.sampled_from([0, 1, 2, 3, 4]), min_size=last - first + 1, max_size=last - first + 1
                )
            )
            if per_offset
            else [ack_type]
        )
        error = self.share.ack(member, (first, last, types))
        if len(types) > 1 and len(types) != last - first + 1:
            assert error is ErrorCode.INVALID_REQUEST
            return
        owned = all(self._at(o)[0] is ACQ and self._at(o)[2] == member for o in range(first, last + 1))
        if not owned:
            assert error in (ErrorCode.INVALID_RECORD_STATE, ErrorCode.INVALID_REQUEST)
            return
        assert error is ErrorCode.NONE
        for offset in range(first, last + 1):
            kind = types[offset - first] if len(types) > 1 else types[0]
            if kind == 2:
                self._release(offset, decrease=False)
            elif kind != 4:
                self.model[offset] = (ACK_TO_STATE[kind], self.model[offset][1], None)
        self._advance_start()

    @rule(member=MEMBERS)
    def member_leaves(self, member: str) -> None:
        self.share.tenant.release_member(GROUP, member)
        for offset, (state, _, owner) in list(self.model.items()):
            if state is ACQ and owner == member:
                self._release(offset, decrease=False)  # Kafka 4.3.1 keeps the count (tests/share)
        self._advance_start()

    @rule()
    def locks_expire(self) -> None:
        self.share.timers.advance(LOCK_MS)
        for offset, (state, _, _) in list(self.model.items()):
            if state is ACQ:
                self._release(offset, decrease=False)
        self._advance_start()

    # -- what must hold after every step ---------------------------------------------------------------
    @invariant()
    def records_and_offsets_are_the_models(self) -> None:
        if self.share.tenant.describe(GROUP, self.share.tenant_topic(), 0) is None:
            return
        assert self.share.start == self.start
        states = self.share.states()
        for offset in range(self.start, self.end + 1):
            assert states.get(offset, (AV, 0, None)) == self._at(offset), offset
        available = [o for o in range(self.start, self.end + 1) if self._at(o)[0] is AV]
        assert self.share.next_offset() == (available[0] if available else max(self.end + 1, self.start))


ShareModel.TestCase.settings = hsettings(max_examples=150, stateful_step_count=40, deadline=None)
test_share_partition_matches_the_model = ShareModel.TestCase
