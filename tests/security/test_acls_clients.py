"""Each stock client over PLAINTEXT (principal User:ANONYMOUS) against `--authorizer standard`: a group
without an ACL for the caller gives the client its authorization error, and the same consumer group
works once an ACL is created through a real admin client (confluent-kafka's AdminClient.create_acls,
kafka-python's KafkaAdminClient.create_acls) or, for kafka-python's consumer, the real `kcoord acls
--add` command in a subprocess (issue 25's acceptance). A producer to a topic without an ACL gets its topic
authorization error.

The server is bootstrapped once: started with allow.everyone.if.no.acl.found=true, it takes ALL on the
cluster and on topic `t` for ANONYMOUS, then restarts with the default (false): the ACLs come back from
the coordinator log, and everything else is closed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import GroupAuthorizationFailedError as AioGroupAuthorizationFailed
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
)
from confluent_kafka.admin import ResourceType as AdminResourceType
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
)
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from tests.integration.conftest import wait_until
from tests.kcoord_fork import run_command
from tests.kcoord_process import KcoordServer
from tests.security.conftest import ALL, CLUSTER, TOPIC, binding, create_acls
from tests.server.wire import connect, create_topic

ANONYMOUS = "User:ANONYMOUS"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcoordServer]:
    data = tmp_path_factory.mktemp("acl-clients") / "data"
    flags = ["--fsync", "never", "--authorizer", "standard"]
    proc = KcoordServer(data, *flags, "--allow-everyone-if-no-acl-found", "true")
    proc.start()
    try:
        with connect(proc.address) as sock:
            assert create_topic(sock, "t", 1)["error_code"] == 0
            assert create_acls(sock, binding(CLUSTER, "kafka-cluster", ALL), binding(TOPIC, "t", ALL)) == [
                0,
                0,
            ]
        proc.extra = flags
        proc.restart()
        producer = Producer({"bootstrap.servers": proc.bootstrap})
        producer.produce("t", b"v")
        assert producer.flush(15) == 0
        yield proc
    finally:
        proc.kill()
        print("server log tail:\n" + "\n".join(proc.lines[-60:]))


def allow_group_with_confluent(server: KcoordServer, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    acl = AclBinding(
        AdminResourceType.GROUP, group, ResourcePatternType.LITERAL, ANONYMOUS, "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    for future in admin.create_acls([acl]).values():
        future.result(timeout=15)


def allow_group_with_kafka_python(server: KcoordServer, group: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        pattern = ResourcePattern(ResourceType.GROUP, group, ACLResourcePatternType.LITERAL)
        acl = ACL(ANONYMOUS, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        result = admin.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1, result
    finally:
        admin.close()


def allow_group_with_kcoord_acls(server: KcoordServer, group: str) -> None:
    """The `kcoord acls` command line, run as an operator would (from this checkout)."""
    added = run_command(
        [
            sys.executable, "-m", "kcoord", "acls", "--bootstrap-server", server.bootstrap,
            "--add", "--allow-principal", ANONYMOUS, "--operation", "Read", "--group", group,
        ],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert added.returncode == 0, (added.stdout, added.stderr)
    assert group in added.stdout, added.stdout


def _confluent_consumer(server: KcoordServer, group: str) -> Any:
    consumer = Consumer({
        "bootstrap.servers": server.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })  # fmt: skip
    consumer.subscribe(["t"])
    return consumer


def test_confluent_kafka_group_authorization(secured: KcoordServer) -> None:
    group = "g-confluent"
    consumer = _confluent_consumer(secured, group)
    try:
        failed = wait_until(lambda: (m := consumer.poll(0.2)) is not None and m.error(), 20, "a group error")
        assert failed.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    allow_group_with_confluent(secured, group)
    consumer = _confluent_consumer(secured, group)
    try:
        message = wait_until(
            lambda: (m := consumer.poll(0.2)) is not None and not m.error() and m, 20, "a record"
        )
        assert message.value() == b"v"
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    # DescribeAcls / DeleteAcls through the same admin client
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    wanted = AclBindingFilter(
        AdminResourceType.GROUP, group, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY,
    )  # fmt: skip
    assert [(b.name, b.principal, b.operation) for b in admin.describe_acls(wanted).result(timeout=15)] == [
        (group, ANONYMOUS, AclOperation.READ)
    ]
    deleted = admin.delete_acls([wanted])[wanted].result(timeout=15)
    assert [b.name for b in deleted] == [group]
    assert admin.describe_acls(wanted).result(timeout=15) == []
    producer = Producer({"bootstrap.servers": secured.bootstrap, "message.timeout.ms": 10000})
    errors: list[Any] = []
    producer.produce("closed", b"v", on_delivery=lambda error, _: errors.append(error))
    producer.flush(15)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_kafka_python_group_authorization(secured: KcoordServer) -> None:
    group = "g-kafka-python"
    options = {
        "bootstrap_servers": secured.bootstrap,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }
    consumer = KafkaConsumer("t", group_id=group, **options)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            wait_until(lambda: consumer.poll(timeout_ms=2000), 20, "a group error")
    finally:
        consumer.close()
    allow_group_with_kcoord_acls(secured, group)
    consumer = KafkaConsumer("t", group_id=group, **options)
    try:
        batches = wait_until(lambda: consumer.poll(timeout_ms=2000), 20, "a record")
        assert [r.value for records in batches.values() for r in records] == [b"v"]
        consumer.commit()
    finally:
        consumer.close()
    producer = KafkaProducer(bootstrap_servers=secured.bootstrap, max_block_ms=10000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("closed", b"v").get(timeout=15)
    finally:
        producer.close()


def test_aiokafka_group_authorization(secured: KcoordServer) -> None:
    group = "g-aiokafka"

    async def consume() -> bytes:
        consumer = AIOKafkaConsumer(
            "t", bootstrap_servers=secured.bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False,
        )  # fmt: skip
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 20)
            await consumer.commit()
            return bytes(record.value or b"")
        finally:
            await consumer.stop()

    with pytest.raises((AioGroupAuthorizationFailed, KafkaException)):
        asyncio.run(consume())
    allow_group_with_kafka_python(secured, group)
    assert asyncio.run(consume()) == b"v"
