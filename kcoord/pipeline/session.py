"""A SparkSession for the jobs with the environment fixed up for the user.

SPARK_LOCAL_IP / spark.driver.host pinned to 127.0.0.1 for local runs (else Spark binds the
external interface), PYSPARK_PYTHON = this interpreter (else workers start another Python), Java
found on PATH or JAVA_HOME before Spark tries and fails with a Java stack trace.

With `log_path` (the CLI) the JVM's stderr goes through `JvmStderr`: Spark's own log (and the
stack traces of failed tasks) into that file, its console progress bar to the terminal, so a
failure ends as the CLI's one line and not as pages of Java. The progress bar is on only when
stderr is a terminal (`progress_wanted`).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from kcoord.pipeline.reader import PipelineError


def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    java = shutil.which("java")
    if java is None:
        raise PipelineError(
            "no Java found on PATH or in JAVA_HOME: install a JRE 17+ (openjdk-17-jre-headless)"
        )
    return java


def check_master(master: str) -> None:
    """A spark:// master that does not answer fails here in one line, not after Spark's retries."""
    if not master.startswith("spark://"):
        return
    for hostport in master[len("spark://") :].split(","):
        url = urlparse(f"spark://{hostport}")
        try:
            with socket.create_connection((url.hostname or "", url.port or 7077), timeout=5):
                pass
        except OSError as exc:
            raise PipelineError(f"Spark master {master} unreachable: {exc.strerror or exc}") from None


class JvmStderr:
    """A pipe for the JVM's stderr: everything into `log_path`, Spark's progress bar to a terminal.

    Spark's ConsoleProgressBar draws "\\r[Stage ...]" and clears with "\\r<spaces>\\r"; those pieces
    are forwarded when our stderr is a terminal, every other byte only goes to the log file.
    """

    def __init__(self, log_path: str) -> None:
        self.log_path = log_path
        self.read_fd, self.write_fd = os.pipe()
        self._log = open(log_path, "wb")  # noqa: SIM115 (closed by the pump thread at EOF)
        self._tty = os.isatty(2)
        self._thread = threading.Thread(target=self._pump, name="jvm-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        pending = b""
        with self._log:
            while chunk := os.read(self.read_fd, 65536):
                self._log.write(chunk)
                self._log.flush()
                *pieces, pending = re.split(rb"[\r\n]", pending + chunk)
                for piece in pieces:
                    if self._tty and (piece.startswith(b"[Stage") or (piece and not piece.strip())):
                        os.write(2, b"\r" + piece)
        os.close(self.read_fd)

    def launched(self) -> None:
        """The JVM holds its own copy of the write end: ours closes, so its exit ends the pump."""
        os.close(self.write_fd)


def progress_wanted(fd: int = 2) -> bool:
    """Spark's stage progress bar only for a person at a terminal: in a pipe, a log file or CI its
    carriage-return redraws are noise (issue 28)."""
    return os.isatty(fd)


def start(
    master: str, app_name: str, log_path: str | None = None, settings: Mapping[str, str] | None = None
) -> Any:
    """`settings`: Spark properties over ours (the test suite's: one core, fewer shuffle partitions)."""
    find_java()
    check_master(master)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext  # late: importing pyspark costs seconds
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from kcoord.pipeline.source import register

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app_name)
        .set("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
        .set("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "true" if progress_wanted() else "false")
        .set("spark.sql.shuffle.partitions", "4")
    )
    conf.setAll(list((settings or {}).items()))
    gateway = None
    if log_path is not None:
        stderr = JvmStderr(log_path)
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": stderr.write_fd})  # type: ignore[no-untyped-call]  # unannotated in pyspark
        finally:
            stderr.launched()
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    spark = SparkSession(context)
    register(spark)
    return spark
