"""ShareFetch (78) and ShareAcknowledge (79) over raw sockets against a real server: share sessions
(SharePartitionManager.newContext / acknowledgeSessionUpdate), acquisition and acknowledgement through
the share-partition tenant, long polling woken by produced data and by released records, and
read_committed filtering (ShareFetchUtils, SharePartition.filterAbortedTransactionalRecords).

Each test names the Kafka method whose answer it expects.
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

import pytest

from kcoord.protocol.errors import ErrorCode
from kcoord.protocol.frames import decode_response
from tests.kcoord_process import KcoordServer
from tests.server.test_dataplane_wire import batch, produce
from tests.server.test_transactions_wire import add_partitions, end_txn, init_pid, txn_batch
from tests.server.test_transactions_wire import produce as produce_txn
from tests.server.wire import call, connect, create_topic, read_frame, send

SHARE_FETCH, SHARE_ACKNOWLEDGE, METADATA, INCREMENTAL_ALTER_CONFIGS, SHARE_GROUP_HEARTBEAT = 78, 79, 3, 44, 76
GROUP_RESOURCE = 32
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
TOPIC = "t"  # the name test_transactions_wire's helpers produce to


def topic_id(sock: socket.socket, name: str = TOPIC) -> uuid.UUID:
    body = {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": name}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    found: uuid.UUID = call(sock, METADATA, 12, body)["topics"][0]["topic_id"]
    return found


def set_group_configs(sock: socket.socket, group: str, **configs: str) -> None:
    entries = [{"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in configs.items()]
    body = {
        "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": entries}],
        "validate_only": False,
    }
    assert call(sock, INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]["error_code"] == ErrorCode.NONE


def acks(first: int, last: int, *types: int) -> list[dict[str, Any]]:
    return [{"first_offset": first, "last_offset": last, "acknowledge_types": list(types)}]


def fetch_body(
    tid: uuid.UUID, epoch: int, member: str, group: str = "g", wait_ms: int = 0, ack: list[Any] | None = None,
    max_records: int = 500, partitions: tuple[int, ...] = (0,), **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    topics = [
        {
            "topic_id": tid,
            "partitions": [{"partition_index": p, "acknowledgement_batches": ack or []} for p in partitions],
        }
    ]
    return {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": wait_ms,
        "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": 500,
        "topics": topics, "forgotten_topics_data": [], **extra,
    }  # fmt: skip


def share_fetch(sock: socket.socket, version: int = 1, **kwargs: Any) -> dict[str, Any]:
    return call(sock, SHARE_FETCH, version, fetch_body(**kwargs))


def share_ack(
    sock: socket.socket, tid: uuid.UUID, epoch: int, member: str, ack: list[Any], group: str = "g",
    version: int = 1, **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    body = {
        "group_id": group, "member_id": member, "share_session_epoch": epoch,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": ack}]}],
        **extra,
    }  # fmt: skip
    return call(sock, SHARE_ACKNOWLEDGE, version, body)


def acquired(response: dict[str, Any]) -> list[tuple[int, int, int]]:
    assert response["error_code"] == ErrorCode.NONE, response
    return [
        (r["first_offset"], r["last_offset"], r["delivery_count"])
        for topic in response["responses"]
        for p in topic["partitions"]
        for r in p["acquired_records"]
    ]


def offsets(ranges: list[tuple[int, int, int]]) -> dict[int, int]:
    """offset -> delivery count of acquired ranges (the tenant may answer a range per offset)."""
    return {offset: count for first, last, count in ranges for offset in range(first, last + 1)}


def partition(response: dict[str, Any]) -> dict[str, Any]:
    (topic,) = response["responses"]
    (entry,) = topic["partitions"]
    return entry  # type: ignore[no-any-return]


@pytest.fixture
def conn(server: KcoordServer) -> socket.socket:
    sock = connect(server.address)
    assert create_topic(sock, TOPIC, 1)["error_code"] == ErrorCode.NONE
    return sock


@pytest.fixture
def tid(conn: socket.socket) -> uuid.UUID:
    set_group_configs(conn, "g", share_auto_offset_reset="earliest")
    return topic_id(conn)


def test_sessions_open_at_0_move_by_one_and_close_at_minus_1(conn: socket.socket, tid: uuid.UUID) -> None:
    """SharePartitionManager.newContext and ShareSessionCache: the epochs' rules and their errors."""
    assert share_fetch(conn, tid=tid, epoch=1, member="m")["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert share_fetch(conn, tid=tid, epoch=-1, member="m")["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    # acknowledgements in the request that opens a session: INVALID_REQUEST
    opening = share_fetch(conn, tid=tid, epoch=0, member="m", ack=acks(0, 0, ACCEPT))
    assert opening["error_code"] == ErrorCode.INVALID_REQUEST
    first = share_fetch(conn, tid=tid, epoch=0, member="m")
    assert first["error_code"] == ErrorCode.NONE
    # a new session lists each of its partitions, even with nothing to give
    assert (
        partition(first)["partition_index"] == 0 and partition(first)["records"] == b""
    )  # empty, never null (librdkafka)
    assert (
        share_fetch(conn, tid=tid, epoch=2, member="m")["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    )
    later = share_fetch(conn, tid=tid, epoch=1, member="m")
    assert later["error_code"] == ErrorCode.NONE and later["responses"] == []  # nothing new: not listed
    assert (
        share_ack(conn, tid, 0, "m", acks(0, 0, ACCEPT))["error_code"]
        == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    )
    assert share_ack(conn, tid, 2, "m", [])["error_code"] == ErrorCode.NONE
    assert share_fetch(conn, tid=tid, epoch=-1, member="m")["error_code"] == ErrorCode.NONE
    assert share_fetch(conn, tid=tid, epoch=4, member="m")["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_request_checks(conn: socket.socket, tid: uuid.UUID) -> None:
    """KafkaApis.handleShareFetchRequest: a member id is needed; v2's renew request fetches nothing
    and so carries no fetch limits (KIP-1222); an unknown acquire mode is refused."""
    assert share_fetch(conn, tid=tid, epoch=0, member="")["error_code"] == ErrorCode.INVALID_REQUEST
    renew = share_fetch(
        conn, version=2, tid=tid, epoch=0, member="m", is_renew_ack=True, share_acquire_mode=0
    )
    assert renew["error_code"] == ErrorCode.INVALID_REQUEST
    mode = share_fetch(conn, version=2, tid=tid, epoch=0, member="m", share_acquire_mode=7)
    assert mode["error_code"] == ErrorCode.INVALID_REQUEST


def test_one_member_gets_what_another_holds_only_once_released(conn: socket.socket, tid: uuid.UUID) -> None:
    """SharePartition.acquire / acknowledge: records acquired by one member are not given to another
    until released; released ones come back with their delivery count up by one."""
    assert produce(conn, TOPIC, 0, batch(5))["error_code"] == ErrorCode.NONE
    other = connect(conn.getpeername())
    assert acquired(share_fetch(conn, tid=tid, epoch=0, member="a")) == [(0, 4, 1)]
    assert acquired(share_fetch(other, tid=tid, epoch=0, member="b")) == []
    released = share_ack(conn, tid, 1, "a", acks(0, 4, RELEASE))
    assert partition(released)["error_code"] == ErrorCode.NONE
    assert acquired(share_fetch(other, tid=tid, epoch=1, member="b")) == [(0, 4, 2)]
    # b accepts 0-1, rejects 2, releases 3-4 (one type per offset), piggy-backed on its next fetch.
    # That fetch runs beside the acknowledgements' write and skips records whose state change is being
    # written (Kafka 4.3.1's SharePartition.acquire, batchHasOngoingStateTransition): with no wait it
    # gets nothing; the next fetch gets 3-4 again
    per_offset = acks(0, 4, ACCEPT, ACCEPT, REJECT, RELEASE, RELEASE)
    again = share_fetch(other, tid=tid, epoch=2, member="b", ack=per_offset)
    assert partition(again)["acknowledge_error_code"] == ErrorCode.NONE
    assert acquired(again) == []
    assert offsets(acquired(share_fetch(other, tid=tid, epoch=3, member="b"))) == {3: 3, 4: 3}
    # a record not acquired by the member: INVALID_RECORD_STATE
    wrong = share_fetch(conn, tid=tid, epoch=2, member="a", ack=acks(3, 3, ACCEPT))
    assert partition(wrong)["acknowledge_error_code"] == ErrorCode.INVALID_RECORD_STATE


def test_malformed_acknowledgements_are_invalid_request(conn: socket.socket, tid: uuid.UUID) -> None:
    """KafkaApis.validateAcknowledgementBatches, per partition."""
    share_fetch(conn, tid=tid, epoch=0, member="m")
    for epoch, bad in enumerate(
        (acks(3, 2, ACCEPT), acks(0, 2, ACCEPT, ACCEPT), acks(0, 0, 9), acks(0, 0), acks(0, 0, RENEW)),
        start=1,
    ):
        answer = share_ack(conn, tid, epoch, "m", bad)
        assert partition(answer)["error_code"] == ErrorCode.INVALID_REQUEST, bad
    stranger = {
        "topic_id": uuid.uuid4(),
        "partitions": [{"partition_index": 0, "acknowledgement_batches": acks(0, 0, 1)}],
    }
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 6, "topics": [stranger]}
    unknown = call(conn, SHARE_ACKNOWLEDGE, 1, body)
    assert partition(unknown)["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_max_records_and_record_limit_mode(conn: socket.socket, tid: uuid.UUID) -> None:
    """max_records bounds what is acquired except for whole batches (batch-optimized), and strictly
    in v2's record_limit mode (KIP-1206)."""
    produce(conn, TOPIC, 0, batch(10))
    assert acquired(share_fetch(conn, tid=tid, epoch=0, member="a", max_records=3)) == [(0, 9, 1)]
    other = connect(conn.getpeername())
    assert partition(share_ack(conn, tid, 1, "a", acks(0, 9, RELEASE)))["error_code"] == ErrorCode.NONE
    strict = share_fetch(other, version=2, tid=tid, epoch=0, member="b", max_records=3, share_acquire_mode=1)
    assert offsets(acquired(strict)) == {0: 2, 1: 2, 2: 2}
    assert strict["acquisition_lock_timeout_ms"] == 30_000  # group.share.record.lock.duration.ms


def test_a_parked_fetch_is_woken_by_produced_data(conn: socket.socket, tid: uuid.UUID) -> None:
    """DelayedShareFetch: with nothing to acquire the fetch waits up to max_wait_ms, and an append to the
    partition completes it."""
    share_fetch(conn, tid=tid, epoch=0, member="m")
    send(conn, SHARE_FETCH, 1, 7, fetch_body(tid, 1, "m", wait_ms=20_000))
    producer = connect(conn.getpeername())
    started = time.monotonic()
    assert produce(producer, TOPIC, 0, batch(2))["error_code"] == ErrorCode.NONE
    got, response = decode_response(SHARE_FETCH, 1, read_frame(conn))
    assert got == 7 and acquired(response) == [(0, 1, 1)]
    assert time.monotonic() - started < 10  # woken by the append, not by the 20 s deadline


def test_a_parked_fetch_is_woken_by_released_records(conn: socket.socket, tid: uuid.UUID) -> None:
    """SharePartition's release completes DelayedShareFetches waiting on the share partition."""
    produce(conn, TOPIC, 0, batch(3))
    holder = connect(conn.getpeername())
    assert acquired(share_fetch(holder, tid=tid, epoch=0, member="a")) == [(0, 2, 1)]
    share_fetch(conn, tid=tid, epoch=0, member="b")
    send(conn, SHARE_FETCH, 1, 9, fetch_body(tid, 1, "b", wait_ms=20_000))
    started = time.monotonic()
    assert partition(share_ack(holder, tid, 1, "a", acks(0, 2, RELEASE)))["error_code"] == ErrorCode.NONE
    got, response = decode_response(SHARE_FETCH, 1, read_frame(conn))
    assert got == 9 and acquired(response) == [(0, 2, 2)]
    assert time.monotonic() - started < 10


def test_an_unanswerable_wait_ends_at_max_wait_ms(conn: socket.socket, tid: uuid.UUID) -> None:
    share_fetch(conn, tid=tid, epoch=0, member="m")
    started = time.monotonic()
    response = share_fetch(conn, tid=tid, epoch=1, member="m", wait_ms=300)
    assert response["responses"] == [] and time.monotonic() - started >= 0.25


def test_min_bytes_holds_the_answer_until_max_wait_ms(conn: socket.socket, tid: uuid.UUID) -> None:
    """DelayedShareFetch.tryComplete: fewer than min_bytes to acquire waits; at the deadline what there
    is is acquired and sent (onExpiration -> onComplete)."""
    produce(conn, TOPIC, 0, batch(1))
    share_fetch(conn, tid=tid, epoch=0, member="m", max_records=0)  # opens the session, acquires nothing
    body = fetch_body(tid, 1, "m", wait_ms=400)
    body["min_bytes"] = 1 << 20
    started = time.monotonic()
    answer = call(conn, SHARE_FETCH, 1, body)
    assert acquired(answer) == [(0, 0, 1)] and time.monotonic() - started >= 0.35


def test_closing_the_session_releases_what_the_member_holds(conn: socket.socket, tid: uuid.UUID) -> None:
    """KafkaApis: the final ShareFetch (epoch -1) acknowledges, then SharePartitionManager.releaseSession."""
    produce(conn, TOPIC, 0, batch(4))
    assert acquired(share_fetch(conn, tid=tid, epoch=0, member="a")) == [(0, 3, 1)]
    final = share_fetch(conn, tid=tid, epoch=-1, member="a", ack=acks(0, 0, ACCEPT))
    assert partition(final)["acknowledge_error_code"] == ErrorCode.NONE and acquired(final) == []
    # released as Kafka releases a closed session's records, their delivery count kept (Kafka 4.3.1,
    # tests/share) (the release follows the answer, as in Kafka: a waiting fetch is woken by it)
    assert offsets(acquired(share_fetch(conn, tid=tid, epoch=0, member="b", wait_ms=10_000))) == {
        1: 2,
        2: 2,
        3: 2,
    }


def test_renew_keeps_the_records_and_fetches_nothing(conn: socket.socket, tid: uuid.UUID) -> None:
    """ShareFetch v2 is_renew_ack (KIP-1222): RENEW restarts the lock, the records stay acquired."""
    produce(conn, TOPIC, 0, batch(2))
    assert acquired(share_fetch(conn, version=2, tid=tid, epoch=0, member="a")) == [(0, 1, 1)]
    renew = fetch_body(tid, 1, "a", ack=acks(0, 1, RENEW), is_renew_ack=True, share_acquire_mode=0)
    renew.update(max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0)
    answer = call(conn, SHARE_FETCH, 2, renew)
    assert partition(answer)["acknowledge_error_code"] == ErrorCode.NONE and acquired(answer) == []
    assert (
        partition(share_ack(conn, tid, 2, "a", acks(0, 1, ACCEPT), version=2))["error_code"] == ErrorCode.NONE
    )


def test_read_committed_skips_aborted_transactions(conn: socket.socket) -> None:
    """share.isolation.level=read_committed: up to the LSO, aborted records and markers never acquired
    (SharePartition.filterAbortedTransactionalRecords)."""
    set_group_configs(conn, "rc", share_auto_offset_reset="earliest", share_isolation_level="read_committed")
    tid = topic_id(conn)
    pid = init_pid(conn, "tx")
    producer_id, epoch = pid["producer_id"], pid["producer_epoch"]
    assert add_partitions(conn, "tx", producer_id, epoch, [0]) == {0: ErrorCode.NONE}
    records = txn_batch(producer_id, epoch, 0, [b"aborted-1", b"aborted-2"])
    assert produce_txn(conn, 9, "tx", records) == ErrorCode.NONE  # offsets 0-1
    assert end_txn(conn, "tx", producer_id, epoch, commit=False)["error_code"] == ErrorCode.NONE  # marker 2
    produce(conn, TOPIC, 0, batch(2))  # offsets 3-4
    got = share_fetch(conn, tid=tid, epoch=0, member="m", group="rc")
    deadline = time.monotonic() + 10
    ranges = acquired(got)
    while not ranges and time.monotonic() < deadline:  # the abort marker is written after EndTxn answers
        ranges = acquired(
            share_fetch(conn, tid=tid, epoch=len(ranges) + 1, member="m", group="rc", wait_ms=500)
        )
    assert ranges == [(3, 4, 1)]


def test_forgotten_partitions_leave_the_session(conn: socket.socket) -> None:
    """ShareSession.update: the request's partitions join the session, forgotten_topics_data leave it;
    a later fetch reads every partition still in the session, named in the request or not."""
    assert create_topic(conn, "two", 2)["error_code"] == ErrorCode.NONE
    set_group_configs(conn, "g", share_auto_offset_reset="earliest")
    tid = topic_id(conn, "two")
    share_fetch(conn, tid=tid, epoch=0, member="m", partitions=(0, 1))
    for index in (0, 1):
        assert produce(conn, "two", index, batch(1))["error_code"] == ErrorCode.NONE
    forget = fetch_body(tid, 1, "m", partitions=())
    forget["forgotten_topics_data"] = [{"topic_id": tid, "partitions": [1]}]
    answer = call(conn, SHARE_FETCH, 1, forget)
    listed = [
        (p["partition_index"], len(p["acquired_records"]))
        for t in answer["responses"]
        for p in t["partitions"]
    ]
    assert listed == [(0, 1)]
    later = share_fetch(conn, tid=tid, epoch=2, member="m", partitions=(1,))  # 1 joins again
    assert [p["partition_index"] for p in partition_list(later)] == [1]


def partition_list(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for topic in response["responses"] for p in topic["partitions"]]


def test_a_member_leaving_the_group_releases_its_records(conn: socket.socket, tid: uuid.UUID) -> None:
    """The group side tells the edge (ShareMemberListener.member_left): the member's records are
    released (SharePartition.releaseAcquiredRecords); its share session lives on with its connection."""
    heartbeat = {"group_id": "g", "member_id": "leaver", "member_epoch": 0, "subscribed_topic_names": [TOPIC]}
    assert call(conn, SHARE_GROUP_HEARTBEAT, 1, heartbeat)["error_code"] == ErrorCode.NONE
    produce(conn, TOPIC, 0, batch(2))
    assert acquired(share_fetch(conn, tid=tid, epoch=0, member="leaver")) == [(0, 1, 1)]
    leave = {**heartbeat, "member_epoch": -1, "subscribed_topic_names": None}
    assert call(conn, SHARE_GROUP_HEARTBEAT, 1, leave)["error_code"] == ErrorCode.NONE
    other = connect(conn.getpeername())
    back = acquired(share_fetch(other, tid=tid, epoch=0, member="stayer", wait_ms=10_000))
    assert offsets(back) == {0: 2, 1: 2}  # released on leaving, the delivery count kept (Kafka 4.3.1)
    assert share_fetch(conn, tid=tid, epoch=1, member="leaver")["error_code"] == ErrorCode.NONE


def test_a_closed_connection_ends_its_sessions_and_releases_at_once(
    server: KcoordServer, tid: uuid.UUID
) -> None:
    """ShareSessionCache's ClientConnectionDisconnectListener: the session opened on a connection that
    closes is removed and its member's records released (onMemberLeave), long before their locks
    (30 s) would expire; a session the member reopened on another connection is not touched."""
    first = connect(server.address)
    produce(first, TOPIC, 0, batch(3))
    assert acquired(share_fetch(first, tid=tid, epoch=0, member="gone")) == [(0, 2, 1)]
    reopened, moved = connect(server.address), connect(server.address)
    assert share_fetch(reopened, tid=tid, epoch=0, member="moved")["error_code"] == ErrorCode.NONE
    assert share_fetch(moved, tid=tid, epoch=0, member="moved")["error_code"] == ErrorCode.NONE
    reopened.close()  # "moved"'s session now belongs to the third connection
    first.close()
    waiter = connect(server.address)
    back = acquired(share_fetch(waiter, tid=tid, epoch=0, member="taker", wait_ms=10_000))
    assert offsets(back) == {0: 2, 1: 2, 2: 2}  # the delivery count kept, as Kafka 4.3.1 (tests/share)
    gone = share_fetch(waiter, tid=tid, epoch=1, member="gone")
    assert gone["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert share_fetch(moved, tid=tid, epoch=1, member="moved")["error_code"] == ErrorCode.NONE


def test_a_fetch_of_a_long_log_sends_the_acquired_batches_and_counts_min_bytes_over_the_log(
    conn: socket.socket, tid: uuid.UUID
) -> None:
    """The log is read only as far as acquisition can reach (a copy of up to max_bytes per fetch cost
    per record of the log: kcoord/broker/share/fetch.py), with the same answer: the batches holding
    the acquired records (ShareFetchUtils.maybeSliceFetchRecords), and min_bytes met by what the log
    holds up to max_bytes (DelayedShareFetch's minBytes check), not by what one fetch acquires."""
    sizes = [len(batch(10)) for _ in range(20)]
    for _ in range(20):
        produce(conn, TOPIC, 0, batch(10))
    share_fetch(conn, tid=tid, epoch=0, member="m", max_records=0)  # opens the session, acquires nothing
    body = fetch_body(tid, 1, "m", wait_ms=20_000, max_records=15)
    body["min_bytes"] = sum(sizes[:6])  # more than the two batches acquired, less than the log holds
    started = time.monotonic()
    answer = call(conn, SHARE_FETCH, 1, body)
    assert time.monotonic() - started < 10  # answered at once, not at max_wait_ms
    assert acquired(answer) == [(0, 19, 1)]  # 15 records end inside the second batch
    assert len(partition(answer)["records"]) == sum(sizes[:2])
    later = share_fetch(conn, tid=tid, epoch=2, member="m", max_records=500)
    assert acquired(later) == [(20, 199, 1)] and len(partition(later)["records"]) == sum(sizes[2:])
