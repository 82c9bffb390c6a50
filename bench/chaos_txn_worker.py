"""A stock transactional producer (confluent-kafka) for bench.chaos: transactions of a few records each
over every partition of TOPIC, one after another for SECONDS. One JSON line per event on stdout:
{"committed": [values...], "t": ...} once commit_transaction returned, {"aborted": [values...]} when a
transaction failed and was aborted (its records must never be read committed), {"error": "..."},
finally {"done": transactions}.

A transaction whose commit raised without a clear abort is reported as {"unknown": [values...]}:
it may have committed or not (the client cannot tell), so the verifier allows both.

A fatal error ends the worker, as it ends a producer (librdkafka: the instance must be recreated);
bench.chaos then starts a new one with the same transactional id (InitProducerId fences the old one
and finishes its transaction) whose values start at FIRST, so no value is ever produced twice.
usage: python -m bench.chaos_txn_worker BOOTSTRAP TOPIC TXN_ID SECONDS [FIRST]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

RECORDS_PER_TXN = 4


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def main(bootstrap: str, topic: str, txn_id: str, seconds: float, first: int = 0) -> None:
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 60_000,
            "topic.metadata.refresh.interval.ms": 1000,
            "retry.backoff.ms": 50,
            "message.timeout.ms": 55_000,
        }
    )
    producer.init_transactions(60)
    end, number, done = time.monotonic() + seconds, first, 0
    while time.monotonic() < end:
        values = [f"{txn_id}:{number + i}" for i in range(RECORDS_PER_TXN)]
        number += RECORDS_PER_TXN
        try:
            producer.begin_transaction()
            for value in values:
                producer.produce(topic, value=value.encode(), key=value.encode())
            _commit(producer)
            emit(committed=values, t=time.time())
        except KafkaException as exc:
            error = exc.args[0]
            emit(error=str(error)[:200], t=time.time())
            if error.fatal():
                emit(unknown=values, fatal=True, t=time.time())
                break
            try:
                producer.abort_transaction(60)
                emit(aborted=values, t=time.time())
            except KafkaException as again:
                emit(unknown=values, error=str(again.args[0])[:200], t=time.time())
                break
        done += 1
    emit(done=done)


def _commit(producer: Any) -> None:
    """commit_transaction, again while it fails retriably (the transaction stays open meanwhile, as
    librdkafka documents); a retriable failure left at the last attempt is raised."""
    from confluent_kafka import KafkaException

    for attempt in range(10):
        try:
            producer.commit_transaction(60)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == 9:
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    first = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), first)
