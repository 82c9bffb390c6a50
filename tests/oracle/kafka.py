"""Apache Kafka 4.3 itself, the oracle of tests/oracle: the real broker from Maven Central's jars.

One KRaft node (`process.roles=broker,controller`) on free 127.0.0.1 ports, its storage formatted in a
temporary directory, started with a small, quickly starting JVM, ready once it answers Metadata with
itself as broker and controller and the group coordinator of every `__consumer_offsets` partition is
loaded (a condition polled, never a sleep for time), stopped by its PID. Measured on the 2-core
machine: the jars fetched in ~15 s with an empty Maven repository (~4 s from ~/.m2), the format ~1 s,
`java` to ready 2-4 s idle (~9 s with the machine loaded), ~290 MiB resident.

The jars (`org.apache.kafka:kafka_2.13` and what it pulls) are copied by Maven from a throwaway pom
into a cache outside the repository (`~/.cache/kcoord/kafka-4.3.1`, or `$KCOORD_ORACLE_CACHE`), under
a file lock so that two pytest-xdist workers never download at once.
Nothing here imports pytest: the fixture is in conftest.py.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.coordinator.runtime.shards import shard_of
from kcoord.protocol.frames import decode_response, encode_request
from tests import jvm
from tests.kcoord_process import recv_exactly

__all__ = ["KAFKA_VERSION", "KafkaOracle", "OracleUnavailable", "fetch_jars", "start_kafka"]

KAFKA_VERSION = "4.3.1"
# The broker's own dependencies, plus an SLF4J binding so that its log says why it did not start.
ARTIFACTS = (
    ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.4"),
)
# Small and fast: C1 only (a short-lived test broker never profits from C2) on one compiler thread,
# class-data sharing (the JDK's archive, and Kafka's own from tests/jvm.py), the serial collector (no
# parallel GC threads competing for two cores), and no hsperfdata file sampled and written every tick.
JVM_FLAGS = ("-Xmx512m", "-Xms64m", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-Xshare:auto",
             "-XX:+UseSerialGC", "-XX:-UsePerfData")  # fmt: skip
# What an idle test broker burns CPU on, turned down (measured on the 2-core machine: the ready broker's
# idle CPU 1.32 -> 0.54 CPU-s a minute with JVM_FLAGS; start-up unchanged): the controller's no-op record
# every 500 ms (KRaftConfigs.METADATA_MAX_IDLE_INTERVAL_MS_DOC: 0 writes none; the raft I/O, controller and
# metadata publisher threads spent their idle time on it), and the threads that wake every 300 ms to poll
# (SocketServer's processors, 3 a listener; KafkaRequestHandler's, 8). Pools whose threads sleep until
# work comes (background.threads, group.coordinator.threads) keep Kafka's sizes: fewer of them would save
# nothing idle and could only slow what the tests race against (a new topic reaching every coordinator
# shard's metadata image). None of these is a config kcoord reports or a test reads.
IDLE_SETTINGS = ("metadata.max.idle.interval.ms=0", "num.network.threads=1", "num.io.threads=2")
NODE_ID = 1
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions


def _one_group_per_partition() -> list[str]:
    by_partition: dict[int, str] = {}
    for n in range(10_000):  # 50 partitions are covered after a few hundred names
        name = f"kafka-oracle-ready-{n}"
        by_partition.setdefault(shard_of(name, OFFSETS_PARTITIONS), name)
        if len(by_partition) == OFFSETS_PARTITIONS:
            break
    return sorted(by_partition.values())


READY_GROUPS = _one_group_per_partition()


class OracleUnavailable(Exception):
    """Kafka cannot be obtained or started here (the reason is the message)."""


def cache_dir() -> Path:
    root = os.environ.get("KCOORD_ORACLE_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "kcoord"
    return base / f"kafka-{KAFKA_VERSION}"


def _pom() -> str:
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in ARTIFACTS
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kcoord.oracle</groupId><artifactId>kafka-oracle</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>"
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # blocks while another worker downloads
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_jars() -> Path:
    """The directory of Kafka's jars, downloaded by Maven the first time (one process at a time)."""
    libs = cache_dir() / "libs"
    done = libs / ".complete"
    with _locked(cache_dir().with_name(cache_dir().name + ".lock")):
        if done.exists():
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise OracleUnavailable("no `mvn` on PATH to fetch Kafka's jars from Maven Central")
        shutil.rmtree(libs, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="kafka-pom-") as work:
            (Path(work) / "pom.xml").write_text(_pom())
            argv = [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={libs}"]
            try:
                ran = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600, check=False)
            except subprocess.TimeoutExpired as exc:
                raise OracleUnavailable("mvn dependency:copy-dependencies timed out (600 s)") from exc
        if ran.returncode != 0 or not (libs / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
            raise OracleUnavailable(f"mvn could not fetch Kafka {KAFKA_VERSION}: {ran.stdout[-600:]}")
        done.write_text("\n".join(sorted(p.name for p in libs.glob("*.jar"))) + "\n")
    return libs


def java() -> str:
    """A Java 17+ runtime (Kafka 4's brokers need 17): JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if found is None or not Path(found).exists():
        raise OracleUnavailable("no Java runtime (JAVA_HOME or `java` on PATH)")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _properties(broker_port: int, controller_port: int, log_dir: Path) -> str:
    """One combined node with one replica of everything; no initial rebalance delay, as kcoord's test
    servers run (tests/kcoord_process.py)."""
    return "\n".join(
        (
            "process.roles=broker,controller",
            f"node.id={NODE_ID}",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker_port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={log_dir}",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            *IDLE_SETTINGS,
            "",
        )
    )


_LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
"""


@dataclass
class KafkaOracle:
    """A running Kafka broker; `startup_s` is the time from `java` to ready."""

    proc: subprocess.Popen[bytes]
    port: int
    workdir: Path
    startup_s: float = 0.0
    _log: Any = field(default=None, repr=False)
    _archive: jvm.Archive | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        path = self.workdir / "kafka.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL if it does not exit in time; then its files go."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._archive is not None:
            self._archive.done(self.proc.returncode)
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def archive(libs: Path, main: str) -> jvm.Archive:
    """The class-data archive of `main` (kafka.Kafka, kafka.tools.StorageTool) on these jars."""
    return jvm.archive(f"kafka-{main.rsplit('.', 1)[-1]}", java(), JVM_FLAGS, f"{libs}/*")


def _java_cmd(libs: Path, workdir: Path, cds: jvm.Archive, *args: str) -> list[str]:
    log4j = f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}"
    return [java(), *JVM_FLAGS, *cds.flags, log4j, "-cp", f"{libs}/*", *args]


def random_uuid() -> str:
    """16 random bytes in URL-safe base64 without padding, never starting with '-' (as Kafka's
    Uuid.randomUuid, so that a command line never takes the id for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _format(libs: Path, workdir: Path, props: Path) -> None:
    cds = archive(libs, "kafka.tools.StorageTool")
    argv = _java_cmd(libs, workdir, cds, "kafka.tools.StorageTool", "format", "--standalone")
    argv += ["-t", random_uuid(), "-c", str(props)]
    try:
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except BaseException:
        cds.done(None)  # a timed-out run was killed: its dump, if any, is not kept
        raise
    cds.done(ran.returncode)
    if ran.returncode != 0:
        raise OracleUnavailable(f"kafka-storage format failed: {(ran.stdout + ran.stderr)[-600:]}")


def start_kafka(timeout: float = 120.0) -> KafkaOracle:
    """Fetch (cached), format and start one Kafka node; ready on return, or OracleUnavailable."""
    libs = fetch_jars()
    java()  # fails early, before a directory is made, where there is no Java
    workdir = Path(tempfile.mkdtemp(prefix="kafka-oracle-"))
    props = workdir / "server.properties"
    props.write_text(_properties(_free_port(), _free_port(), workdir / "data"))
    (workdir / "log4j2.properties").write_text(_LOG4J2)
    try:
        _format(libs, workdir, props)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    port = int(props.read_text().split("PLAINTEXT://127.0.0.1:")[1].split(",")[0])
    log = (workdir / "kafka.log").open("wb")
    began = time.monotonic()
    cds = archive(libs, "kafka.Kafka")
    proc = subprocess.Popen(
        _java_cmd(libs, workdir, cds, "kafka.Kafka", str(props)),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    oracle = KafkaOracle(proc, port, workdir, _log=log, _archive=cds)
    try:
        _wait_ready(oracle, began + timeout)
    except BaseException:
        tail = oracle.log_tail()
        oracle.stop()
        raise OracleUnavailable(f"Kafka did not become ready within {timeout:.0f} s:\n{tail}") from None
    oracle.startup_s = time.monotonic() - began
    return oracle


def _call(sock: socket.socket, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(encode_request(api_key, version, 1, body, client_id="kafka-oracle-ready"))
    size = int.from_bytes(recv_exactly(sock, 4), "big")
    return decode_response(api_key, version, recv_exactly(sock, size))[1]


def _ready(address: tuple[str, int]) -> bool:
    """Metadata names this node as broker and controller, and the group coordinator is loaded: the
    first FindCoordinator makes `__consumer_offsets`, later ones answer NONE once it is led, and
    DescribeGroups answers without an error for a group in each of its partitions."""
    with socket.create_connection(address, timeout=5) as sock:
        sock.settimeout(10)
        meta = _call(sock, 3, 12, {"topics": [], "allow_auto_topic_creation": False})
        if meta["controller_id"] != NODE_ID or not meta["brokers"]:
            return False
        found = _call(sock, 10, 4, {"key_type": 0, "coordinator_keys": ["kafka-oracle-ready"]})
        if found["coordinators"][0]["error_code"] != 0:
            return False
        # One group in each offsets partition: NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until
        # that partition's coordinator is loaded (ListGroups skips the ones not yet led).
        groups = _call(sock, 15, 5, {"groups": READY_GROUPS, "include_authorized_operations": False})
        return all(group["error_code"] == 0 for group in groups["groups"])


def _wait_ready(oracle: KafkaOracle, deadline: float) -> None:
    while True:
        if oracle.proc.poll() is not None:
            raise OracleUnavailable(f"Kafka exited with {oracle.proc.returncode}")
        with contextlib.suppress(OSError):
            if _ready(oracle.address):
                return
        if time.monotonic() >= deadline:
            raise TimeoutError
        time.sleep(0.1)  # a poll interval between connection attempts, not a wait for time to pass
