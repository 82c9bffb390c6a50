"""Apache Kafka 4.3.1 as the share-group oracle: the jars and JVM of tests/oracle/kafka.py, with the
broker settings a share-group test needs and a node that can be killed (SIGKILL) and started again on
its own log directory and ports.

Why not tests/oracle's session broker: the share tests need broker settings that one cannot change at
run time (`group.share.min.record.lock.duration.ms`, read by GroupConfig's bounds check when a group
config is altered, is a static config of ShareGroupConfig), and a node they may kill -9.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests import jvm
from tests.oracle import kafka as oracle
from tests.ports import free_port

__all__ = ["SHARE_BROKER_SETTINGS", "ShareKafka"]

# Short lock durations must pass GroupConfig's validation (`share.record.lock.duration.ms` within the
# broker's min..max, ShareGroupConfig); one partition of __share_group_state keeps its creation cheap.
SHARE_BROKER_SETTINGS = (
    "group.share.min.record.lock.duration.ms=1000",
    "group.share.min.delivery.count.limit=2",
    "share.coordinator.state.topic.num.partitions=1",
    "group.share.min.session.timeout.ms=6000",
    "group.share.session.timeout.ms=6000",
    "group.share.min.heartbeat.interval.ms=500",
    "group.share.heartbeat.interval.ms=500",
)


class ShareKafka:
    """One KRaft node (broker + controller) whose files survive a kill, so it can start again."""

    def __init__(self, workdir: Path) -> None:
        self.libs = oracle.fetch_jars()
        oracle.java()
        self.workdir = workdir
        self.props = workdir / "server.properties"
        # ports outside the ephemeral range (tests/ports.py): a restart finds them still free
        base = oracle._properties(free_port(), free_port(), workdir / "data")
        self.props.write_text(base + "\n".join(SHARE_BROKER_SETTINGS) + "\n")
        (workdir / "log4j2.properties").write_text(oracle._LOG4J2)
        oracle._format(self.libs, workdir, self.props)
        self.port = int(self.props.read_text().split("PLAINTEXT://127.0.0.1:")[1].split(",")[0])
        self.proc: subprocess.Popen[bytes] | None = None
        self._archive: jvm.Archive | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def start(self, timeout: float = 120.0) -> None:
        self._archive = oracle.archive(self.libs, "kafka.Kafka")
        with (self.workdir / "kafka.log").open("ab") as log:
            self.proc = subprocess.Popen(
                oracle._java_cmd(self.libs, self.workdir, self._archive, "kafka.Kafka", str(self.props)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        view = oracle.KafkaOracle(self.proc, self.port, self.workdir)
        try:
            oracle._wait_ready(view, time.monotonic() + timeout)
        except BaseException:
            tail = view.log_tail()
            self.kill()
            raise oracle.OracleUnavailable(f"Kafka (share) not ready in {timeout:.0f} s:\n{tail}") from None

    def kill(self) -> None:
        """SIGKILL: no controlled shutdown, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._exited()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._exited()

    def _exited(self) -> None:
        """The class-data archive this JVM dumped on a clean exit (tests/jvm.py) is kept."""
        if self._archive is not None and self.proc is not None and self.proc.poll() is not None:
            self._archive.done(self.proc.returncode)
            self._archive = None

    def restart(self, kill: bool, while_down: Callable[[], None] = lambda: None) -> None:
        self.kill() if kill else self.stop()
        while_down()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        path = self.workdir / "kafka.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
