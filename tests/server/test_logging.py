"""`--log-format json` and `--log-level`: what a log shipper and an operator read from a real server."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.kcoord_process import KcoordServer
from tests.server.wire import call, connect, is_closed

METADATA = 3


def _json_lines(lines: list[str]) -> list[dict[str, str]]:
    entries = [json.loads(line) for line in lines]  # every line, not just some, must be JSON
    for entry in entries:
        assert set(entry) >= {"ts", "level", "logger", "msg"}, entry
        assert entry["ts"].endswith("Z") and "T" in entry["ts"]
    return entries


def test_json_format_writes_one_json_object_per_line(tmp_path: Path) -> None:
    server = KcoordServer(tmp_path / "data", "--log-format", "json", "--log-level", "info")
    server.start()
    try:
        with connect(server.address) as sock:
            sock.sendall(b"\x00\x00\x00\x02\xff\xff")  # a frame too short for a request header
            assert is_closed(sock)
        server.wait_for("closing connection")
        assert server.stop(signal.SIGTERM) == 0
        entries = _json_lines(server.lines)
        messages = [(e["level"], e["logger"], e["msg"]) for e in entries]
        assert any(
            level == "INFO" and msg.startswith("listening on 127.0.0.1:") for level, _, msg in messages
        )
        bad = [m for m in messages if "closing connection" in m[2]]
        assert len(bad) == 1 and bad[0][:2] == ("WARNING", "kcoord.connection")
        assert ("INFO", "kcoord.app", "stopped") in messages
    finally:
        server.kill()


def test_debug_level_logs_each_request_and_info_does_not(tmp_path: Path) -> None:
    for level, expected in (("DEBUG", 1), ("INFO", 0)):
        server = KcoordServer(tmp_path / level, "--log-level", level)
        server.start()
        try:
            with connect(server.address) as sock:
                call(sock, METADATA, 4, {"topics": [], "allow_auto_topic_creation": False}, correlation_id=77)
            if expected:
                server.wait_for(r"request api_key=3 api_version=4 correlation_id=77 client_id=kcoord-test")
            assert server.stop(signal.SIGTERM) == 0
            assert server.count("correlation_id=77") == expected
        finally:
            server.kill()


def test_bad_log_level_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    server = KcoordServer(tmp_path / "data", "--log-level", "chatty")
    with pytest.raises(AssertionError, match="exited=True"):
        server.start(timeout=10)
    assert server.proc is not None and server.proc.wait(10) == 2  # argparse's usage error
    output = "\n".join(server.lines)
    assert "--log-level" in output and "chatty" in output
    assert "Traceback" not in output
    assert server.port == 0  # it never listened
