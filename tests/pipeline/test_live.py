"""The live-directory rule: a job reading a directory the server is writing does not disturb it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kcoord.pipeline import offsets
from tests.integration.conftest import Workers, create_topic, partitions_of, unique, wait_for_split
from tests.kcoord_process import KcoordServer

COMMITS = 40


def test_a_job_on_a_live_directory_reads_a_prefix_and_commits_keep_succeeding(
    spark: Any, tmp_path: Path
) -> None:
    server = KcoordServer(
        tmp_path / "data", "--group-min-session-timeout-ms", "1000", log_path=tmp_path / "s.log"
    )
    factory = Workers(server, tmp_path)
    try:
        server.start()
        topic, group = unique("live"), unique("live-g")
        create_topic(server.bootstrap, topic, 2)
        worker = factory.spawn("kafka-python", group, [topic])
        wait_for_split([worker], partitions_of(topic, 2))
        worker.commit([(topic, 0, 0, ""), (topic, 1, 0, "")])
        done = threading.Event()
        failures: list[BaseException] = []

        def commit_loop() -> None:
            try:
                for n in range(1, COMMITS + 1):  # bounded: COMMITS requests, each bounded by commit()
                    worker.commit([(topic, 0, n, ""), (topic, 1, n, "")])
            except BaseException as exc:
                failures.append(exc)
            finally:
                done.set()

        thread = threading.Thread(target=commit_loop)
        thread.start()
        rows = offsets.latest_offsets(spark, str(server.data_dir)).where(f"`group` = '{group}'").collect()
        thread.join(120)
        assert done.is_set() and not failures, failures
        seen = {(r["topic"], r["partition"]): r["offset"] for r in rows}
        assert set(seen) == {(topic, 0), (topic, 1)}
        assert all(0 <= offset <= COMMITS for offset in seen.values()), seen
        final = worker.committed([(topic, 0), (topic, 1)])
        assert {tp: o for tp, (o, _) in final.items()} == {(topic, 0): COMMITS, (topic, 1): COMMITS}
        worker.close()
    finally:
        factory.cleanup()
        server.kill()
