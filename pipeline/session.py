"""A SparkSession for the jobs with the environment fixed up for the user.

SPARK_LOCAL_IP / spark.driver.host pinned to 127.0.0.1 for local runs (else Spark binds the
external interface), PYSPARK_PYTHON = this interpreter (else workers start another Python), Java
found on PATH or JAVA_HOME before Spark tries and fails with a Java stack trace.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from typing import Any
from urllib.parse import urlparse

from pipeline.reader import PipelineError


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


def start(master: str, app_name: str) -> Any:
    find_java()
    check_master(master)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # late: importing pyspark costs seconds

    from pipeline.source import register

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
        .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
