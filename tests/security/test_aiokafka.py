"""aiokafka over SSL (server-authenticated, mTLS), SASL_PLAINTEXT and SASL_SSL with PLAIN,
SCRAM-SHA-256/512 and OAUTHBEARER: produce, consume in a group, commit; bad credentials refused: aiokafka
0.14 raises KafkaConnectionError("Unable to bootstrap") and logs its SaslAuthenticationFailed error (58)
with the server's message."""

from __future__ import annotations

import asyncio
import logging
import ssl
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError

from tests.security.conftest import PASSWORD, USER, Security

pytestmark = pytest.mark.timeout(120)


class _Token(AbstractTokenProvider):
    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self) -> str:
        return self._token


def _config(security: Security, case: str, token: str | None = None) -> dict[str, Any]:
    pki, server = security.pki, security.server
    protocol, _, mechanism = case.partition(":")
    config: dict[str, Any] = {
        "bootstrap_servers": server.bootstrap_for(protocol),
        "security_protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=str(pki.ca))
        if mechanism == "mTLS":
            context.load_cert_chain(str(pki.client_cert), str(pki.client_key))
        config["ssl_context"] = context
    if mechanism == "OAUTHBEARER":
        config.update(
            sasl_mechanism=mechanism, sasl_oauth_token_provider=_Token(token or security.tokens.token())
        )
    elif mechanism and mechanism != "mTLS":
        config.update(sasl_mechanism=mechanism, sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    return config


CASES = [
    "SSL",
    "SSL:mTLS",
    "SASL_SSL:PLAIN",
    "SASL_PLAINTEXT:SCRAM-SHA-256",
    "SASL_SSL:SCRAM-SHA-512",
    "SASL_PLAINTEXT:OAUTHBEARER",
]


@pytest.mark.parametrize("case", CASES)
async def test_produce_consume_in_a_group_and_commit(security: Security, case: str) -> None:
    config = _config(security, case)
    topic, group = f"ak-{uuid.uuid4().hex[:8]}", f"ak-group-{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(**config)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"secret hello")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **config
    )
    await consumer.start()
    try:
        record = await asyncio.wait_for(consumer.getone(), 20)
        assert record.value == b"secret hello"
        await consumer.commit()
        assert await consumer.committed(TopicPartition(topic, 0)) == 1
    finally:
        await consumer.stop()


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("SASL_PLAINTEXT:PLAIN", {"sasl_plain_password": "wrong"}),
        ("SASL_SSL:SCRAM-SHA-256", {"sasl_plain_password": "wrong"}),
        ("SASL_PLAINTEXT:SCRAM-SHA-512", {"sasl_plain_username": "mallory"}),
        ("SASL_SSL:OAUTHBEARER", "expired"),
        ("SASL_PLAINTEXT:OAUTHBEARER", "stranger"),
    ],
)
async def test_bad_credentials_are_refused(
    security: Security, case: str, change: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = None
    if change == "expired":
        token = security.tokens.token(lifetime_s=-120)
    elif change == "stranger":
        token = security.tokens.token(stranger=True)
    config = _config(security, case, token)
    if isinstance(change, dict):
        config.update(change)
    caplog.set_level(logging.ERROR, logger="aiokafka")
    producer = AIOKafkaProducer(**config, request_timeout_ms=5000)
    before = len(security.server.lines)
    with pytest.raises(KafkaConnectionError):
        await producer.start()
    await producer.stop()
    if "OAUTHBEARER" in case:
        # aiokafka 0.14 takes the server's {"status":"invalid_token"} challenge for success and sends
        # Metadata, which the still unauthenticated connection answers by closing (ILLEGAL_SASL_STATE).
        security.server.wait_for("unexpected api_key=3 during SASL authentication", 5, start=before)
        return
    refusals = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailed" in r.getMessage()]
    assert refusals, [r.getMessage() for r in caplog.records]
    assert "Authentication failed" in refusals[0]
