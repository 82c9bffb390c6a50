"""A transactional producer of one client library in its own process, driven by commands.

    python -m tests.integration.workers.txn_producer '<json options>'

Options: client (kafka-python | confluent-kafka | aiokafka), bootstrap, transactional_id, client_id,
transaction_timeout_ms (default 60000).

Commands on stdin, one JSON object per line, each answered with {"event": "done", "id": N, ...} or
{"event": "failed", "id": N, "error": "<exception type>: <message>"}:

    {"cmd": "init"}                                     # init_transactions (the client's start)
    {"cmd": "begin"}
    {"cmd": "send", "topic": T, "partition": P, "values": ["a", "b"]}
        -> done with "offsets": [offset, ...] once the client delivered them
    {"cmd": "offsets", "group": G, "offsets": [[topic, partition, offset], ...]}
                                                        # send_offsets_to_transaction (group id only:
                                                        # no member data, as old clients send)
    {"cmd": "commit"} / {"cmd": "abort"}
    {"cmd": "close"}

A client the coordinator fenced reports it in "failed"; the test decides what that means.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from typing import Any

from tests.integration.workers.common import emit


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class ConfluentTxn:
    def __init__(self, options: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self._bootstrap = options["bootstrap"]
        self._producer = Producer(
            {
                "bootstrap.servers": options["bootstrap"],
                "transactional.id": options["transactional_id"],
                "client.id": options["client_id"],
                "transaction.timeout.ms": options.get("transaction_timeout_ms", 60000),
                "linger.ms": 5,
            }
        )

    def init(self) -> dict[str, Any]:
        self._producer.init_transactions(30)
        return {}

    def begin(self) -> dict[str, Any]:
        self._producer.begin_transaction()
        return {}

    def send(self, topic: str, partition: int, values: list[str]) -> dict[str, Any]:
        offsets: list[int] = []
        errors: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                offsets.append(msg.offset())

        for value in values:
            self._producer.produce(topic, value.encode(), partition=partition, on_delivery=delivered)
        self._producer.flush(30)
        if errors:
            raise RuntimeError(f"delivery failed: {errors[0]}")
        return {"offsets": offsets}

    def offsets(self, group: str, offsets: list[list[Any]]) -> dict[str, Any]:
        from confluent_kafka import Consumer, TopicPartition

        # librdkafka takes the group's metadata from a consumer; one that never joins names the group
        # only (generation -1, no member id), as a producer outside the group would send it.
        consumer = Consumer({"bootstrap.servers": self._bootstrap, "group.id": group})
        try:
            tps = [TopicPartition(t, p, o) for t, p, o in offsets]
            self._producer.send_offsets_to_transaction(tps, consumer.consumer_group_metadata(), 30)
        finally:
            consumer.close()
        return {}

    def commit(self) -> dict[str, Any]:
        self._producer.commit_transaction(30)
        return {}

    def abort(self) -> dict[str, Any]:
        self._producer.abort_transaction(30)
        return {}

    def close(self) -> None:
        self._producer.flush(5)


class KafkaPythonTxn:
    def __init__(self, options: dict[str, Any]) -> None:
        from kafka import KafkaProducer

        self._producer = KafkaProducer(
            bootstrap_servers=options["bootstrap"],
            transactional_id=options["transactional_id"],
            client_id=options["client_id"],
            transaction_timeout_ms=options.get("transaction_timeout_ms", 60000),
            linger_ms=5,
        )

    def init(self) -> dict[str, Any]:
        self._producer.init_transactions()
        return {}

    def begin(self) -> dict[str, Any]:
        self._producer.begin_transaction()
        return {}

    def send(self, topic: str, partition: int, values: list[str]) -> dict[str, Any]:
        futures = [self._producer.send(topic, v.encode(), partition=partition) for v in values]
        self._producer.flush(30)
        return {"offsets": [f.get(30).offset for f in futures]}

    def offsets(self, group: str, offsets: list[list[Any]]) -> dict[str, Any]:
        from kafka.structs import OffsetAndMetadata, TopicPartition

        tps = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for t, p, o in offsets}
        self._producer.send_offsets_to_transaction(tps, group)
        return {}

    def commit(self) -> dict[str, Any]:
        self._producer.commit_transaction()
        return {}

    def abort(self) -> dict[str, Any]:
        self._producer.abort_transaction()
        return {}

    def close(self) -> None:
        self._producer.close(5)


class AiokafkaTxn:
    """aiokafka is asyncio: every command runs to completion on the worker's own loop."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._producer: Any = None

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(asyncio.wait_for(coro, 60))

    def init(self) -> dict[str, Any]:
        from aiokafka import AIOKafkaProducer

        async def start() -> None:
            self._producer = AIOKafkaProducer(
                bootstrap_servers=self._options["bootstrap"],
                transactional_id=self._options["transactional_id"],
                client_id=self._options["client_id"],
                transaction_timeout_ms=self._options.get("transaction_timeout_ms", 60000),
                linger_ms=5,
            )
            await self._producer.start()  # InitProducerId with the transactional id

        self._run(start())
        return {}

    def begin(self) -> dict[str, Any]:
        self._run(self._producer.begin_transaction())
        return {}

    def send(self, topic: str, partition: int, values: list[str]) -> dict[str, Any]:
        async def send_all() -> list[int]:
            futures = [await self._producer.send(topic, v.encode(), partition=partition) for v in values]
            return [(await f).offset for f in futures]

        return {"offsets": self._run(send_all())}

    def offsets(self, group: str, offsets: list[list[Any]]) -> dict[str, Any]:
        from aiokafka.structs import TopicPartition

        tps = {TopicPartition(t, p): o for t, p, o in offsets}
        self._run(self._producer.send_offsets_to_transaction(tps, group))
        return {}

    def commit(self) -> dict[str, Any]:
        self._run(self._producer.commit_transaction())
        return {}

    def abort(self) -> dict[str, Any]:
        self._run(self._producer.abort_transaction())
        return {}

    def close(self) -> None:
        if self._producer is not None:
            self._run(self._producer.stop())


CLIENTS = {"confluent-kafka": ConfluentTxn, "kafka-python": KafkaPythonTxn, "aiokafka": AiokafkaTxn}


def main() -> None:
    options = json.loads(sys.argv[1])
    client = CLIENTS[options["client"]](options)
    emit("started")
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        name, command_id = command["cmd"], command.get("id")
        if name == "close":
            break
        try:
            if name == "send":
                answer = client.send(command["topic"], command["partition"], command["values"])
            elif name == "offsets":
                answer = client.offsets(command["group"], command["offsets"])
            else:
                answer = getattr(client, name)()
        except Exception as exc:  # reported to the test, which judges it
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            emit("failed", id=command_id, cmd=name, error=_error(exc))
            continue
        emit("done", id=command_id, cmd=name, **answer)
    try:
        client.close()
    finally:
        emit("closed")


if __name__ == "__main__":
    main()
