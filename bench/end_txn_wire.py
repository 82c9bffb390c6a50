"""EndTxn timed from a raw protocol client (our own codec, no client library), for bench.transactions:
transactions one after another on one connection, each AddPartitionsToTxn then EndTxn (commit) with no
records, so that the round trip is the server's time for EndTxn: answered once PrepareCommit is durable.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.coordinator import call, connect

ERR_NONE, ERR_CONCURRENT_TRANSACTIONS = 0, 51
# AddPartitionsToTxn v3 is the last client form (v4+ is the brokers' batched one); EndTxn v3 is V1's
INIT_PRODUCER_ID_V, ADD_PARTITIONS_V, END_TXN_V = 4, 3, 3


def _check(answer: dict[str, Any], what: str) -> None:
    if answer["error_code"] != ERR_NONE:
        raise RuntimeError(f"{what} answered error {answer['error_code']}")


async def _add_partitions(conn: Any, txn: dict[str, Any], topic: str, partitions: int) -> None:
    """AddPartitionsToTxn, retried while the previous transaction's markers are still being written."""
    body = {
        "v3_and_below_transactional_id": txn["transactional_id"],
        "v3_and_below_producer_id": txn["producer_id"],
        "v3_and_below_producer_epoch": txn["producer_epoch"],
        "v3_and_below_topics": [{"name": topic, "partitions": list(range(partitions))}],
    }
    for _ in range(2000):  # bounded: 2000 x 1 ms
        answer = await call(conn, 24, ADD_PARTITIONS_V, body)
        errors = {p["partition_error_code"] for t in answer["results_by_topic_v3_and_below"]
                  for p in t["results_by_partition"]}  # fmt: skip
        if errors == {ERR_NONE}:
            return
        if errors != {ERR_CONCURRENT_TRANSACTIONS}:
            raise RuntimeError(f"AddPartitionsToTxn answered {sorted(errors)}")
        await asyncio.sleep(0.001)
    raise RuntimeError("AddPartitionsToTxn: CONCURRENT_TRANSACTIONS for 2 s")


async def raw_end_txn_ms(port: int, topic: str, partitions: int, seconds: float) -> list[float]:
    """EndTxn (commit) round trips, one transaction after another for `seconds`."""
    (conn,) = await connect(port, 1)
    try:
        txn = {"transactional_id": f"bench-raw-{time.monotonic_ns()}"}
        init = await call(conn, 22, INIT_PRODUCER_ID_V, {**txn, "transaction_timeout_ms": 60_000})
        _check(init, "InitProducerId")
        txn.update(producer_id=init["producer_id"], producer_epoch=init["producer_epoch"])
        timings: list[float] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await _add_partitions(conn, txn, topic, partitions)
            started = time.perf_counter()
            answer = await call(conn, 26, END_TXN_V, {**txn, "committed": True})
            timings.append((time.perf_counter() - started) * 1000)
            _check(answer, "EndTxn")
        return timings
    finally:
        conn.close()
