"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 share consumer) against a running kcoord.

Subscribes to TOPIC in share group GROUP and polls until the file STOP exists (or 120 s, a bound),
printing one JSON line per non-empty poll: {"got": [[partition, offset, delivery_count], ...]}.
In explicit mode the records whose offsets ACTIONS names ({"offset": "release" | "reject"}) get that
acknowledgement the first time they arrive, every other record ACCEPT, then commit_sync. Closes the
consumer at the end (acknowledgements flushed, the group left) unless ACTIONS says {"hold": true}: then
it stays in the group without acknowledging until it is killed.

usage: python confluent_share_consumer.py BOOTSTRAP TOPIC GROUP implicit|explicit STOP [ACTIONS]
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer

_ACKS = {"release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
_BOUND_S = 120


def _acknowledge(consumer: Any, messages: list[Any], actions: dict[str, str], seen: set[int]) -> None:
    for message in messages:
        action = actions.get(str(message.offset())) if message.offset() not in seen else None
        seen.add(message.offset())
        consumer.acknowledge(message, _ACKS[action] if action else AcknowledgeType.ACCEPT)
    consumer.commit_sync(30)


def main(bootstrap: str, topic: str, group: str, mode: str, stop: str, actions: dict[str, Any]) -> None:
    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + _BOUND_S
    while not os.path.exists(stop) and time.monotonic() < deadline:
        messages = [m for m in consumer.poll(0.5) if m.error() is None]
        if not messages:
            continue
        got = [[m.partition(), m.offset(), m.delivery_count()] for m in messages]
        print(json.dumps({"got": got}), flush=True)
        if actions.get("hold"):
            threading.Event().wait()  # hold the records, acknowledge nothing: the test kills this process
        if mode == "explicit":
            _acknowledge(consumer, messages, actions, seen)
    consumer.close()
    print(json.dumps({"closed": True}), flush=True)


if __name__ == "__main__":
    bootstrap, topic, group, mode, stop = sys.argv[1:6]
    main(bootstrap, topic, group, mode, stop, json.loads(sys.argv[6]) if len(sys.argv) > 6 else {})
