"""ShareFetch over a gap of the durable state after a kill -9: offsets fetched before the restart but
never acknowledged, released or expired were never written (acquisition persists nothing), so the state
read back has a gap between its batches (Kafka's persister read gap window, SharePartition.maybeInitialize).
Kafka 4.3.1 acquires such a gap as new records (SharePartition.acquire -> acquireNewBatchRecords): at most
max_records, rounded up to a log batch's end, never past the gap; record_limit mode acquires exactly
max_records of it (createBatches).
"""

from __future__ import annotations

import socket
import uuid

from kcoord.protocol.errors import ErrorCode
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.test_share_fetch_wire import (
    ACCEPT,
    TOPIC,
    acks,
    acquired,
    partition,
    set_group_configs,
    share_ack,
    share_fetch,
    topic_id,
)
from tests.server.wire import connect, create_topic


def _leave_a_gap(sock: socket.socket, tid: uuid.UUID, group: str) -> None:
    """Acquire 0-29, accept 0-9 and 20-29: 10-19 were fetched but never settled, so never written."""
    assert acquired(share_fetch(sock, tid=tid, epoch=0, member="a", group=group)) == [(0, 29, 1)]
    answer = share_ack(sock, tid, 1, "a", [*acks(0, 9, ACCEPT), *acks(20, 29, ACCEPT)], group=group)
    assert partition(answer)["error_code"] == ErrorCode.NONE


def test_a_gap_is_acquired_up_to_max_records_on_log_batch_ends(server: KcoordServer) -> None:
    sock = connect(server.address)
    assert create_topic(sock, TOPIC, 1)["error_code"] == ErrorCode.NONE
    for _ in range(6):  # log batches 0-4, 5-9, ..., 25-29
        assert produce(sock, TOPIC, 0, batch(5))["error_code"] == ErrorCode.NONE
    tid = topic_id(sock)
    for group in ("g", "s"):
        set_group_configs(sock, group, share_auto_offset_reset="earliest")
        _leave_a_gap(sock, tid, group)
    server.kill()  # not a graceful stop: that would close the sessions and release 10-19 durably
    server.start()
    sock = connect(server.address)
    # batch-optimized: 3 records end inside the log batch 10-14; the rest of the gap comes next
    assert acquired(share_fetch(sock, tid=tid, epoch=0, member="b", max_records=3)) == [(10, 14, 1)]
    assert acquired(share_fetch(sock, tid=tid, epoch=1, member="b", max_records=3)) == [(15, 19, 1)]
    assert acquired(share_fetch(sock, tid=tid, epoch=2, member="b", max_records=3)) == []
    # record_limit (ShareFetch v2, KIP-1206): exactly max_records, as one range
    strict = {"version": 2, "max_records": 3, "share_acquire_mode": 1, "group": "s", "member": "c"}
    assert acquired(share_fetch(sock, tid=tid, epoch=0, **strict)) == [(10, 12, 1)]
    # the rest of 10-14 offset by offset (acquireSubsetBatchRecords), then the gap goes on at 15
    assert acquired(share_fetch(sock, tid=tid, epoch=1, **strict)) == [(13, 13, 1), (14, 14, 1), (15, 15, 1)]
