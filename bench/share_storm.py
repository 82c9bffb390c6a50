"""bench.share_groups' lock-expiry storm: raw-wire share members acquire every record of a topic and go
silent with their connections open; share consumers take the records over when the locks run out.

Only the acquisition lock hands the records back here: the holders' connections stay open (a closed
connection releases its session's records at once, ShareSessionCache's disconnect listener) and their
session timeout (share.session.timeout.ms, 45 s) is longer than the lock (15 s, the shortest a group may
set: group.share.min.record.lock.duration.ms), so no fencing releases them first.
"""

from __future__ import annotations

import argparse
import math
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from bench.share_fleet import Fleet, admin_socket, run_client, set_group_configs
from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, create_topic

METADATA, SHARE_GROUP_HEARTBEAT, SHARE_FETCH = 3, 76, 78
LOCK_MS = 15_000
MAX_LOCKS = 10_000  # group.share.max.partition.max.record.locks: the in-flight window's upper bound


def topic_id(sock: socket.socket, name: str) -> uuid.UUID:
    body = {"topics": [{"topic_id": uuid.UUID(int=0), "name": name}],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}  # fmt: skip
    found: uuid.UUID = call(sock, METADATA, 12, body)["topics"][0]["topic_id"]
    return found


class Holder:
    """A share member on its own connection: joins once, acquires, then never speaks again."""

    def __init__(self, server: KcoordServer, group: str, topic: str, tid: uuid.UUID) -> None:
        self.sock = connect(server.address, timeout=30)
        self.group, self.tid, self.epoch = group, tid, 0
        self.member = str(uuid.uuid4())
        join = {"group_id": group, "member_id": self.member, "member_epoch": 0,
                "subscribed_topic_names": [topic]}  # fmt: skip
        answer = call(self.sock, SHARE_GROUP_HEARTBEAT, 1, join)
        if answer["error_code"] != 0:
            raise RuntimeError(f"ShareGroupHeartbeat: {answer['error_code']} {answer['error_message']}")

    def acquire(self, max_records: int) -> tuple[int, float]:
        """One ShareFetch (waiting up to 5 s for records): how many records it acquired, and when the
        request left (the locks start after that, so they run out no earlier than then + the lock)."""
        body = {
            "group_id": self.group, "member_id": self.member, "share_session_epoch": self.epoch,
            "max_wait_ms": 5000, "min_bytes": 1, "max_bytes": 50 << 20, "max_records": max_records,
            "batch_size": max_records, "forgotten_topics_data": [],
            "topics": [{"topic_id": self.tid,
                        "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}],
        }  # fmt: skip
        sent = time.monotonic()
        answer = call(self.sock, SHARE_FETCH, 1, body)
        self.epoch += 1
        if answer["error_code"] != 0:
            raise RuntimeError(f"ShareFetch: {answer['error_code']} {answer['error_message']}")
        (part,) = [p for t in answer["responses"] for p in t["partitions"]]
        if part["error_code"] != 0:
            raise RuntimeError(f"ShareFetch partition: {part['error_code']} {part['error_message']}")
        return sum(r["last_offset"] - r["first_offset"] + 1 for r in part["acquired_records"]), sent


def hold_everything(holders: list[Holder], records: int) -> tuple[float, float]:
    """The holders acquire all `records` records, each up to its share: (first, last) acquisition time."""
    quota = math.ceil(records / len(holders))
    held, first, last = 0, 0.0, 0.0
    for _ in range(8):  # a bound: a fetch may acquire fewer than asked (window, batch boundaries)
        for holder in holders:
            if held >= records:
                break
            got, sent = holder.acquire(min(quota, records - held))
            if got:
                first, last = first or sent, sent
            held += got
    if held < records:
        raise RuntimeError(f"the holders acquired only {held} of {records} records")
    return first, last


def storm(server: KcoordServer, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    records, group = args.storm_records, f"storm-{time.monotonic_ns()}"
    with admin_socket(server) as sock:
        assert create_topic(sock, topic, 1)["error_code"] == 0, topic
        window = str(min(MAX_LOCKS, max(2000, records)))  # room for every record in flight at once
        set_group_configs(sock, group, share_auto_offset_reset="earliest",
                          share_record_lock_duration_ms=str(LOCK_MS),
                          share_partition_max_record_locks=window)  # fmt: skip
        tid = topic_id(sock, topic)
    produced = {"bootstrap": server.bootstrap, "topic": topic, "partitions": 1, "records": records,
                "message_bytes": args.message_bytes}  # fmt: skip
    run_client("produce", produced, timeout=600)
    holders = [Holder(server, group, topic, tid) for _ in range(args.storm_holders)]
    try:
        first, last = hold_everything(holders, records)
        opts = {"bootstrap": server.bootstrap, "topic": topic, "group": group}
        with Fleet(server, "share", opts, args.storm_takers, Path(args.tmp)) as takers:
            takers.release(timed=False)  # they poll at once and find every record locked
            # The locks taken first run out first: the storm starts then. Nothing happens on the wire
            # before it, so this waits for the clock (the takers meanwhile join and long-poll).
            out_at = first + LOCK_MS / 1000
            time.sleep(max(0.0, out_at - time.monotonic()))
            cpu0 = server.cpu_seconds()
            seen = takers.until(lambda _, again: again >= records, timeout=LOCK_MS / 1000 + 120)
            # polls that reached us before any lock could run out. Counted by arrival time, not by what
            # was queued when the sleep above returned: on a loaded machine that wake-up comes late, and
            # the first expired records may be queued by then (a CI run counted one such poll as early)
            early = sum(1 for at in takers.arrivals if at < out_at)
    finally:
        for holder in holders:
            holder.sock.close()
    return {
        "expired": seen.redelivered,
        "early_polls": early,
        "acquire_spread_s": last - first,
        "first_s": seen.first_at - out_at if seen.first_at else float("nan"),
        "seconds": seen.done_at - out_at,
        "cpu_us_per_record": (seen.cpu_done - cpu0) / max(seen.redelivered, 1) * 1e6,
        "complete": seen.redelivered >= records and seen.records == 0 and early == 0,
    }
