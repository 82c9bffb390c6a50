"""Capture golden request frames from real clients (run by hand; the frames are committed).

    .venv/bin/python -m tests.protocol.golden.capture

Starts `kcoord serve` advertising a recording proxy as its address, so every request a client sends
(bootstrap, group coordinator and data connections) passes the proxy. A confluent-kafka (librdkafka)
and an aiokafka consumer each join a group, commit and leave; the first frame of every
(api_key, api_version) each client sends is written to `<client>-<api_key>-v<version>.bin`.
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


def capture(client: str) -> None:
    server_port, proxy_port = free_port(), free_port()
    proxy = RecordingProxy(proxy_port, server_port)
    data_dir = tempfile.mkdtemp()
    server = subprocess.Popen(
        [sys.executable, "-m", "coordinator", "serve", "--listen", f"127.0.0.1:{server_port}",
         "--advertised-listener", f"127.0.0.1:{proxy_port}", "--data-dir", data_dir,
         "--group-initial-rebalance-delay-ms", "0", "--fsync", "never"],
    )
    try:
        time.sleep(2)
        bootstrap = f"127.0.0.1:{proxy_port}"
        if client == "librdkafka":
            run_confluent(bootstrap, "golden-topic")
        else:
            asyncio.run(run_aiokafka(bootstrap, "golden-topic"))
    finally:
        server.terminate()
        server.wait(10)
    seen: set[tuple[int, int]] = set()
    for frame in proxy.frames:
        api_key, api_version = struct.unpack(">hh", frame[:4])
        if (api_key, api_version) not in seen:
            seen.add((api_key, api_version))
            (HERE / f"{client}-{api_key}-v{api_version}.bin").write_bytes(frame)
    print(client, sorted(seen))


if __name__ == "__main__":
    for name in ("librdkafka", "aiokafka"):
        capture(name)
