"""Capture golden request frames from real clients (run by hand; the frames are committed).

    .venv/bin/python -m tests.protocol.golden.capture

Starts `kcoord serve` advertising a recording proxy as its address, so every request a client sends
(bootstrap, group coordinator and data connections) passes the proxy. Scenarios:

- `group`: a confluent-kafka (librdkafka) and an aiokafka consumer each join a group, commit and
  leave -> `<client>-<api_key>-v<version>.bin`;
- `data`: each client's producer (idempotent where the client does it by default) and a consumer that
  fetches, lists offsets and commits -> `<client>-data-<api_key>-v<version>.bin`;
- `admin`: each client's admin API as frameworks call it at startup (list topics, create topics with
  configs, describe/alter configs, describe cluster, delete records) -> `<client>-admin-...`;
- `consumer`: a confluent-kafka consumer with `group.protocol=consumer` (KIP-848) joins, heartbeats
  past one heartbeat interval, is described by the AdminClient, commits and leaves
  -> `<client>-consumer-...`.

The first frame of every (api_key, api_version) a client sends in a scenario is kept. Heartbeats of
the consumer protocol, which differ by stage rather than by version, keep the first of each stage
instead: `<client>-consumer-<stage>-68-v<version>.bin` (see `heartbeat_stage`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, server: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Until the server accepts connections on `port` (bounded; fails at once if it exited)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() >= deadline:
                raise RuntimeError(f"kcoord serve is not listening on {port}") from None
            time.sleep(0.05)


class RecordingProxy:
    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port, self.target_port = listen_port, target_port
        self.frames: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", listen_port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self._server.accept()
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        buffer = b""
        while data := source.recv(65536):
            sink.sendall(data)
            if not record:
                continue
            buffer += data
            while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack(">i", buffer[:4])[0]:
                size = struct.unpack(">i", buffer[:4])[0]
                self.frames.append(buffer[4 : 4 + size])
                buffer = buffer[4 + size :]


def run_confluent(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden"})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "golden-ck", "client.id": "golden"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    consumer.committed([TopicPartition(topic, 0)], timeout=10)
    consumer.close()


def run_confluent_consumer_protocol(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden"})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "golden-ck", "client.id": "golden",
         "group.protocol": "consumer"}
    )  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    steady = time.monotonic() + 7  # past one heartbeat interval (5 s by default)
    while time.monotonic() < steady:
        consumer.poll(0.2)
    admin.describe_consumer_groups(["golden-ck"])["golden-ck"].result(30)
    consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    consumer.close()


async def run_aiokafka(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="golden-aio", client_id="golden")
    await consumer.start()
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        await consumer.getmany(timeout_ms=200)
    await consumer.commit({TopicPartition(topic, 0): 7})
    await consumer.committed(TopicPartition(topic, 0))
    await consumer.stop()


def run_confluent_data(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden"})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "client.id": "golden", "enable.idempotence": True, "linger.ms": 5}
    )
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "golden-ck", "client.id": "golden",
         "auto.offset.reset": "earliest"}
    )  # fmt: skip
    consumer.subscribe([topic])
    deadline, got = time.monotonic() + 30, 0
    while got < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        got += msg is not None and msg.error() is None
    consumer.commit(asynchronous=False)
    consumer.close()


def run_confluent_admin(bootstrap: str, topic: str) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden"})
    admin.list_topics(timeout=30)
    admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "60000"})])[topic].result(30)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin.describe_configs([resource])[resource].result(30)
    change = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([change])[change].result(30)
    admin.describe_cluster(include_authorized_operations=True).result(30)
    admin.delete_records([TopicPartition(topic, 0, 0)])[TopicPartition(topic, 0)].result(30)


async def run_aiokafka_data(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="golden", enable_idempotence=True)
    await producer.start()
    for i in range(10):
        await producer.send_and_wait(topic, b"v%d" % i, key=b"k%d" % i)
    await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="golden-aio", client_id="golden",
        auto_offset_reset="earliest",
    )  # fmt: skip
    await consumer.start()
    got, deadline = 0, time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=200)
        got += sum(len(b) for b in batches.values())
    await consumer.commit()
    await consumer.stop()


async def run_aiokafka_admin(bootstrap: str, topic: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden")
    await admin.start()
    await admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "60000"})])
    await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "120000"})])
    await admin.describe_cluster()
    await admin.list_topics()
    await admin.close()


def run_kafka_python_data(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="golden")
    for i in range(10):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(30)
    producer.close()
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id="golden-kpy", client_id="golden",
        auto_offset_reset="earliest", consumer_timeout_ms=5000,
    )  # fmt: skip
    for got, _ in enumerate(consumer, 1):
        if got == 10:
            break
    consumer.commit()
    consumer.close()


def run_kafka_python_admin(bootstrap: str, topic: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden")
    admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "60000"})])
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    admin.describe_configs([resource])
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "120000"})])
    admin.describe_cluster()
    admin.list_topics()
    admin.close()


SCENARIOS = {
    ("librdkafka", "group"): lambda b: run_confluent(b, "golden-topic"),
    ("aiokafka", "group"): lambda b: asyncio.run(run_aiokafka(b, "golden-topic")),
    ("librdkafka", "consumer"): lambda b: run_confluent_consumer_protocol(b, "golden-topic"),
    ("librdkafka", "data"): lambda b: run_confluent_data(b, "golden-data"),
    ("aiokafka", "data"): lambda b: asyncio.run(run_aiokafka_data(b, "golden-data")),
    ("kafka-python", "data"): lambda b: run_kafka_python_data(b, "golden-data"),
    ("librdkafka", "admin"): lambda b: run_confluent_admin(b, "golden-admin"),
    ("aiokafka", "admin"): lambda b: asyncio.run(run_aiokafka_admin(b, "golden-admin")),
    ("kafka-python", "admin"): lambda b: run_kafka_python_admin(b, "golden-admin"),
}


def _has_trailing_bytes(frame: bytes) -> bool:
    from kcoord.protocol.frames import decode_request, encode_request

    header, body = decode_request(frame)
    again = encode_request(
        header.request_api_key, header.request_api_version, header.correlation_id, body, header.client_id
    )
    return len(again) - 4 < len(frame)


CONSUMER_GROUP_HEARTBEAT = 68


def heartbeat_stage(frame: bytes) -> str:
    """join (epoch 0), owned (reports the partitions it owns), steady (every field unchanged: null),
    or leave (epoch -1)."""
    from kcoord.protocol.frames import decode_request

    _, body = decode_request(frame)
    if body["member_epoch"] == 0:
        return "join"
    if body["member_epoch"] < 0:
        return "leave"
    return "steady" if body["topic_partitions"] is None else "owned"


def capture(client: str, scenario: str) -> None:
    server_port, proxy_port = free_port(), free_port()
    proxy = RecordingProxy(proxy_port, server_port)
    data_dir = tempfile.mkdtemp()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kcoord",
            "serve",
            "--listen",
            f"127.0.0.1:{server_port}",
            "--advertised-listener",
            f"127.0.0.1:{proxy_port}",
            "--data-dir",
            data_dir,
            "--group-initial-rebalance-delay-ms",
            "0",
            "--fsync",
            "never",
        ],
    )
    try:
        wait_listening(server_port, server)
        bootstrap = f"127.0.0.1:{proxy_port}"
        SCENARIOS[client, scenario](bootstrap)
    finally:
        server.terminate()
        server.wait(10)
    seen: set[tuple[str, int, int]] = set()
    prefix = client if scenario == "group" else f"{client}-{scenario}"
    for frame in proxy.frames:
        api_key, api_version = struct.unpack(">hh", frame[:4])
        stage = f"{heartbeat_stage(frame)}-" if api_key == CONSUMER_GROUP_HEARTBEAT else ""
        if (stage, api_key, api_version) not in seen:
            seen.add((stage, api_key, api_version))
            (HERE / f"{prefix}-{stage}{api_key}-v{api_version}.bin").write_bytes(frame)
        if _has_trailing_bytes(frame):  # also kept: the first such frame of each api and version
            path = HERE / f"{prefix}-trailing-{api_key}-v{api_version}.bin"
            if not path.exists():
                path.write_bytes(frame)
    print(client, scenario, sorted(seen))


if __name__ == "__main__":
    wanted = set(sys.argv[1:])  # scenario names; all of them by default
    for client_name, scenario_name in SCENARIOS:
        if not wanted or scenario_name in wanted:
            capture(client_name, scenario_name)
