"""confluent-kafka (librdkafka) over SSL (server-authenticated, mTLS), SASL_PLAINTEXT and SASL_SSL with
PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER: produce, consume in a group, commit; bad credentials are
reported through error_cb as librdkafka's _AUTHENTICATION error."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.security.conftest import PASSWORD, USER, Security

pytestmark = pytest.mark.timeout(120)


def _config(security: Security, case: str, token: str | None = None) -> dict[str, Any]:
    pki, server = security.pki, security.server
    protocol, _, mechanism = case.partition(":")
    config: dict[str, Any] = {
        "bootstrap.servers": server.bootstrap_for(protocol),
        "security.protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL"):
        config["ssl.ca.location"] = str(pki.ca)
    if mechanism == "mTLS":
        config.update(
            {"ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
        )
    elif mechanism == "OAUTHBEARER":
        value = token or security.tokens.token()
        config.update({"sasl.mechanism": mechanism, "oauth_cb": lambda _config: (value, time.time() + 3600)})
    elif mechanism:
        config.update({"sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": PASSWORD})
    return config


CASES = [
    "SSL",
    "SSL:mTLS",
    "SASL_PLAINTEXT:PLAIN",
    "SASL_SSL:SCRAM-SHA-256",
    "SASL_PLAINTEXT:SCRAM-SHA-512",
    "SASL_SSL:OAUTHBEARER",
]


@pytest.mark.parametrize("case", CASES)
def test_produce_consume_in_a_group_and_commit(security: Security, case: str) -> None:
    config = _config(security, case)
    topic, group = f"ck-{uuid.uuid4().hex[:8]}", f"ck-group-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    producer.produce(topic, b"secret hello")
    assert producer.flush(15) == 0
    consumer = Consumer(
        {**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([topic])
        message = None
        for _ in range(30):  # bounded: each poll waits at most 0.5 s
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None and message.value() == b"secret hello"
        consumer.commit(message, asynchronous=False)
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset == 1
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("SASL_SSL:PLAIN", {"sasl.password": "wrong"}),
        ("SASL_PLAINTEXT:SCRAM-SHA-256", {"sasl.username": "mallory"}),
        ("SASL_SSL:SCRAM-SHA-512", {"sasl.password": "wrong"}),
        ("SASL_PLAINTEXT:OAUTHBEARER", "expired"),
        ("SASL_SSL:OAUTHBEARER", "stranger"),
    ],
)
def test_bad_credentials_are_refused(security: Security, case: str, change: Any) -> None:
    token = None
    if change == "expired":
        token = security.tokens.token(lifetime_s=-120)
    elif change == "stranger":
        token = security.tokens.token(stranger=True)
    config = _config(security, case, token)
    if isinstance(change, dict):
        config.update(change)
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.1)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, errors
    expected = "invalid_token" if "OAUTHBEARER" in case else "Authentication failed"
    assert expected in auth[0].str()
