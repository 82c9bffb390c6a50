"""The share tests' client processes: Kafka 4.3's Java `ShareDriver` (compiled once per session into a
cache outside the repository) and confluent-kafka's `ShareConsumer` (tests/share/clients/), each a
process of its own that prints JSON lines; the test waits on conditions over the events they print.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests import jvm
from tests.kcoord_process import REPO
from tests.oracle.kafka import OracleUnavailable, cache_dir, fetch_jars

__all__ = ["AdminSession", "ClientProcess", "java_classpath", "produce", "start_consumer"]

CLIENTS = Path(__file__).parent / "clients"
SOURCE = CLIENTS / "ShareDriver.java"
# kafka-clients and what it loads at run time (slf4j without a binding: its warning goes to stderr).
JARS = ("kafka-clients-4.3.1.jar", "slf4j-api-1.7.36.jar", "lz4-java-1.10.2.jar", "zstd-jni-1.5.6-10.jar",
        "snappy-java-1.1.10.7.jar")  # fmt: skip
# As tests/oracle/kafka.py's: C1 on one compiler thread, the serial collector, no hsperfdata file; and
# a class-data archive per mode (tests/jvm.py: start to ready 0.51 -> 0.22 CPU-s for the Admin).
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-Xshare:auto", "-XX:+UseSerialGC",
             "-XX:-UsePerfData", "-Xmx256m")  # fmt: skip


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # one xdist worker compiles, the others wait for it
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def java_classpath() -> str:
    """The compiled driver's jar and the client jars; javac runs once per version of the source. A jar,
    not the classes' directory: a class-data archive takes no class from a directory."""
    libs = fetch_jars()
    jars = [str(libs / name) for name in JARS]
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = cache_dir().parent / "share-driver-jar" / digest
    with _locked(out.with_suffix(".lock")):
        if not (out / "ShareDriver.jar").exists():
            tmp = out.with_name(digest + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            _compile(tmp, jars)
            tmp.rename(out)
    return ":".join([str(out / "ShareDriver.jar"), *jars])


def _compile(tmp: Path, jars: list[str]) -> None:
    javac = shutil.which("javac")
    if javac is None:
        raise OracleUnavailable("no `javac` on PATH to build the Java share driver")
    argv = [javac, "-d", str(tmp / "classes"), "-cp", ":".join(jars), str(SOURCE)]
    built = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if built.returncode != 0:
        raise AssertionError(f"javac ShareDriver.java failed:\n{built.stderr[-3000:]}")
    with zipfile.ZipFile(tmp / "ShareDriver.jar", "w") as jar:
        for path in sorted((tmp / "classes").glob("*.class")):
            jar.write(path, path.name)


def _java_argv(mode: str, *args: str) -> tuple[list[str], jvm.Archive]:
    """The driver's command line in `mode` (consume, admin), with the archive of that mode's classes."""
    classpath = java_classpath()
    cds = jvm.archive(f"share-driver-{mode}", "java", JVM_FLAGS, classpath)
    return ["java", *JVM_FLAGS, *cds.flags, "-cp", classpath, "ShareDriver", mode, *args], cds


class AdminSession:
    """One Java Admin process for a broker's whole session (`ShareDriver admin`): a command per line,
    one JSON answer each; the Admin reconnects by itself across a broker restart."""

    def __init__(self, bootstrap: str, log_path: Path) -> None:
        self._lock = threading.Lock()
        self._process = ClientProcess("java-admin", *_java_argv("admin", bootstrap), log_path)
        self._process.wait(lambda events: bool(events), timeout=60)

    def call(self, *words: str, timeout: float = 60) -> dict[str, Any]:
        with self._lock:
            seen = len(self._process.events)
            stdin = self._process.proc.stdin
            assert stdin is not None
            stdin.write(" ".join(words) + "\n")
            stdin.flush()
            self._process.wait(lambda events: len(events) > seen, timeout=timeout)
            answer = self._process.events[seen]
        assert answer["event"] != "error", f"Admin {words[0]} failed: {answer['message']}"
        return answer

    def close(self) -> None:
        self._process.stop()


def produce(bootstrap: str, topic: str, values: list[str], abort: list[str] | None = None) -> None:
    """confluent-kafka's producer in a process of its own (transactional when `abort` is given)."""
    options = {"mode": "produce", "bootstrap": bootstrap, "topic": topic, "values": values,
               "abort": abort or []}  # fmt: skip
    argv = [sys.executable, "-m", "tests.share.clients.confluent_share", json.dumps(options)]
    ran = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, f"producer failed:\n{ran.stderr[-3000:]}"


class ClientProcess:
    """A share consumer's process: its events in order, each stamped with the monotonic time seen."""

    def __init__(self, name: str, argv: list[str], cds: jvm.Archive | None, log_path: Path) -> None:
        self.name = name
        self._cds = cds
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._log = log_path.open("w")
        self.log_path = log_path
        self.proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True)  # fmt: skip
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                event["at"] = time.monotonic()
                event["by"] = self.name
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def records(self) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e.get("event") == "record"]

    def wait(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0) -> None:
        """Until `done(events)` holds; fails on timeout or when the process exited first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done(self.events):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"{self.name}: condition not met (exit={self.proc.poll()}): "
                                         f"{self.events[-5:]}\n{self.stderr_tail()}")  # fmt: skip
                self._cond.wait(min(left, 0.2))

    def stop(self, timeout: float = 60.0) -> None:
        """'stop' on stdin: the client commits what it acknowledged, leaves the group and exits."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        finally:
            self.kill()
        assert self.proc.returncode == 0, f"{self.name} exited {self.proc.returncode}:\n{self.stderr_tail()}"

    def kill(self) -> None:
        """SIGKILL (by PID): the member vanishes holding whatever it acquired."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._log.close()
        if self._cds is not None:
            self._cds.done(self.proc.returncode)  # an archive it dumped on a clean exit is kept
            self._cds = None

    def stderr_tail(self, lines: int = 25) -> str:
        if not self._log.closed:  # stop() reports a bad exit after kill() closed the log
            self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def start_consumer(
    client: str, bootstrap: str, group: str, topic: str, policy: str, log_dir: Path, name: str
) -> ClientProcess:
    """A share consumer of `client` ("java" or "confluent"), subscribed before this returns."""
    cds = None
    if client == "java":
        argv, cds = _java_argv("consume", bootstrap, group, topic, policy)
    else:
        options = {
            "mode": "consume",
            "bootstrap": bootstrap,
            "group": group,
            "topic": topic,
            "policy": policy,
        }
        argv = [sys.executable, "-m", "tests.share.clients.confluent_share", json.dumps(options)]
    process = ClientProcess(name, argv, cds, log_dir / f"{name}.log")
    process.wait(lambda events: any(e["event"] == "subscribed" for e in events), timeout=60)
    return process
