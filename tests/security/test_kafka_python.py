"""kafka-python over SSL (server-authenticated, mTLS), SASL_PLAINTEXT and SASL_SSL with PLAIN,
SCRAM-SHA-256/512 and OAUTHBEARER: produce, consume in a group, commit; bad credentials refused.

kafka-python 3.0.12 retries a failed bootstrap until its timeout and raises KafkaTimeoutError: its
authentication error (SaslAuthenticationFailedError, carrying the server's message) shows in its log.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.net.sasl.oauth import AbstractTokenProvider

from tests.security.conftest import PASSWORD, USER, Security

pytestmark = pytest.mark.timeout(120)


class _Token(AbstractTokenProvider):
    def __init__(self, token: str) -> None:
        self._token = token

    def token(self) -> str:
        return self._token


def _config(security: Security, case: str) -> dict[str, Any]:
    pki, server = security.pki, security.server
    protocol, _, mechanism = case.partition(":")
    config: dict[str, Any] = {
        "bootstrap_servers": server.bootstrap_for(protocol),
        "security_protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL"):
        config["ssl_cafile"] = str(pki.ca)
    if mechanism == "mTLS":
        config.update(ssl_certfile=str(pki.client_cert), ssl_keyfile=str(pki.client_key))
    elif mechanism == "OAUTHBEARER":
        config.update(sasl_mechanism=mechanism, sasl_oauth_token_provider=_Token(security.tokens.token()))
    elif mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    return config


CASES = [
    "SSL",
    "SSL:mTLS",
    "SASL_PLAINTEXT:PLAIN",
    "SASL_SSL:PLAIN",
    "SASL_PLAINTEXT:SCRAM-SHA-256",
    "SASL_SSL:SCRAM-SHA-512",
    "SASL_SSL:OAUTHBEARER",
]


@pytest.mark.parametrize("case", CASES)
def test_produce_consume_in_a_group_and_commit(security: Security, case: str) -> None:
    config = _config(security, case)
    topic, group = f"kp-{uuid.uuid4().hex[:8]}", f"kp-group-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(**config)
    try:
        producer.send(topic, b"secret hello").get(timeout=15)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **config
    )
    try:
        values = []
        for _ in range(60):  # bounded: each poll waits at most 0.5 s
            for records in consumer.poll(timeout_ms=2000).values():
                values += [record.value for record in records]
            if values:
                break
        assert values == [b"secret hello"]
        consumer.commit()
        assert consumer.committed(TopicPartition(topic, 0)) == 1
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("SASL_PLAINTEXT:PLAIN", {"sasl_plain_password": "wrong"}),
        ("SASL_SSL:SCRAM-SHA-256", {"sasl_plain_username": "mallory"}),
        ("SASL_PLAINTEXT:SCRAM-SHA-512", {"sasl_plain_password": "wrong"}),
        ("SASL_SSL:OAUTHBEARER", "expired"),
        ("SASL_PLAINTEXT:OAUTHBEARER", "stranger"),
    ],
)
def test_bad_credentials_are_refused(
    security: Security, case: str, change: Any, caplog: pytest.LogCaptureFixture
) -> None:
    config = _config(security, case)
    if change == "expired":
        config["sasl_oauth_token_provider"] = _Token(security.tokens.token(lifetime_s=-120))
    elif change == "stranger":
        config["sasl_oauth_token_provider"] = _Token(security.tokens.token(stranger=True))
    else:
        config.update(change)
    caplog.set_level(logging.WARNING, logger="kafka")
    failures_before = security.server.count("authentication failed peer=")
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(bootstrap_timeout_ms=1500, **config)
    # The server refused every attempt (its log names each refusal)...
    assert security.server.count("authentication failed peer=") > failures_before
    # ...and the client read why, unless it saw the close before the answer sent just ahead of it:
    # kafka-python 3.0.12 then logs only "socket disconnected" (a race on a loaded machine).
    refusals = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    expected = "invalid_token" if "OAUTHBEARER" in case else "Authentication failed"
    assert all(expected in refusal for refusal in refusals), refusals
