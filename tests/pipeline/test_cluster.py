"""`offsets` on a real Spark standalone cluster (a master and a worker from pyspark's own spark-class on
127.0.0.1) gives the same rows as locally.

One worker with one core: the point is a job whose tasks run in a standalone executor (its own JVM
and Python workers, started by a worker daemon from the master's offer) and not in the driver; a
second worker added two JVMs (its daemon and its executor) and a launcher's, each a few seconds of CPU
on a machine the whole suite shares, and showed nothing the first does not."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kcoord.pipeline import offsets
from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO


def _spark_class(cls: str, *args: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {
        **env,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    return subprocess.Popen(
        [str(home / "bin" / "spark-class"), cls, *args],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


# Module scope: the two JVMs (and their heartbeats) stop once this module's one test is done, not at
# the end of the worker's session.
@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory, spark_env: dict[str, str]) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("standalone")
    procs = [_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                          "--webui-port", "0", log=tmp / "master.log", env=spark_env)]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline and procs[0].poll() is None:
            found = re.search(r"spark://127\.0\.0\.1:\d+", (tmp / "master.log").read_text(errors="replace"))
            url = found.group(0) if found else time.sleep(0.2)
        assert url, (tmp / "master.log").read_text(errors="replace")[-2000:]
        procs.append(_spark_class("org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                  "--cores", "1", "--memory", "1g", "--webui-port", "0",
                                  "--work-dir", str(tmp / "work"),
                                  log=tmp / "worker.log", env=spark_env))  # fmt: skip
        while "Registering worker" not in (tmp / "master.log").read_text(errors="replace"):
            assert time.monotonic() < deadline + 60, "the worker did not register"
            time.sleep(0.2)
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


# Its setup starts a standalone master and a worker (two JVMs) and may be the first to need the
# session's Spark and `recorded`: under pytest-xdist beside the other Spark tests that took over the
# suite's 300 s. Bounded all the same.
@pytest.mark.timeout(600)
def test_offsets_on_a_standalone_cluster_equal_local(
    spark: Any, recorded: dict[str, Any], standalone: str, spark_env: dict[str, str], tmp_path: Path
) -> None:
    local = sorted(tuple(r) for r in offsets.latest_offsets(spark, str(recorded["dir"])).collect())
    done = run_command(
        [sys.executable, "-m", "kcoord", "pipeline", "offsets", "--data-dir", str(recorded["dir"]),
         "--out", str(tmp_path), "--master", standalone],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=spark_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    table = pq.read_table(tmp_path / "offsets").to_pylist()
    remote = sorted(tuple(row[c] for c in offsets.OFFSET_COLUMNS) for row in table)
    assert remote == local and local
