"""confluent-kafka (librdkafka) over SASL_PLAINTEXT with OAUTHBEARER, as a subprocess: produce one
record, consume it in a group and commit, or report how authentication failed. Prints one JSON line.

usage: python confluent_oauthbearer.py BOOTSTRAP TOPIC GROUP (--unsecure-jwt CONFIG | --token JWT)

--unsecure-jwt: librdkafka makes its own unsigned token (enable.sasl.oauthbearer.unsecure.jwt=true,
sasl.oauthbearer.config=CONFIG, e.g. "principal=alice scope=kafka"), as confluent-kafka's own tests do.
--token: the given JWT from an oauth_cb (tokens librdkafka would not make: expired, without sub).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def _config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
    }
    if args.unsecure_jwt is not None:
        config.update(
            {"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": args.unsecure_jwt}
        )
    else:
        token = args.token
        config["oauth_cb"] = lambda _config: (token, time.time() + 3600)
    return config


def refused(config: dict[str, Any]) -> dict[str, Any]:
    """Poll a producer until librdkafka reports an authentication error (bounded: 20 s)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.1)
    auth = [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]
    return {"authentication_error": auth[0] if auth else None, "errors": [e.str() for e in errors]}


def round_trip(config: dict[str, Any], topic: str, group: str) -> dict[str, Any]:
    errors: list[str] = []
    producer = Producer({**config, "error_cb": lambda e: errors.append(e.str())})
    producer.produce(topic, b"unsecured hello")
    left = producer.flush(20)
    consumer = Consumer(
        {**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([topic])
        value = None
        for _ in range(60):  # bounded: each poll waits at most 0.5 s
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value = message.value().decode()
                consumer.commit(message, asynchronous=False)
                break
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        consumer.close()
    return {"unsent": left, "value": value, "committed": committed.offset, "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--unsecure-jwt")
    how.add_argument("--token")
    parser.add_argument("--expect-refusal", action="store_true")
    args = parser.parse_args()
    config = _config(args)
    result = refused(config) if args.expect_refusal else round_trip(config, args.topic, args.group)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
