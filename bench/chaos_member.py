"""A group member that only takes part in rebalances (no commits) for bench.chaos: it subscribes and polls
for SECONDS, so restarting it makes its group rebalance around the committing member.

usage: python -m bench.chaos_member BOOTSTRAP TOPIC GROUP PROTOCOL SECONDS   (PROTOCOL: classic | consumer)
"""

from __future__ import annotations

import sys
import time


def main(bootstrap: str, topic: str, group: str, protocol: str, seconds: float) -> None:
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "group.protocol": protocol, "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 50,
    }  # fmt: skip
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer = Consumer(config)
    consumer.subscribe([topic])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        consumer.poll(0.2)
    consumer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
