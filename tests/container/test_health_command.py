"""`kcoord health` (the image's HEALTHCHECK) against a real `kcoord serve` on loopback, no container:
exit 0 only while a listener answers ApiVersions, exit 1 with one line otherwise (nothing listening,
or something that is not a Kafka listener)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

from tests.kcoord_fork import run_command
from tests.kcoord_process import REPO, KcoordServer


def health(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_command(
        [sys.executable, "-m", "kcoord", "health", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_health_follows_the_listener(tmp_path: Path) -> None:
    server = KcoordServer(tmp_path / "data")
    port = server.start()
    try:
        ok = health("--bootstrap", f"127.0.0.1:{port}")
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.startswith(f"kcoord health: 127.0.0.1:{port} ok ("), ok.stdout
        # Without --bootstrap it asks the port of KCOORD_LISTEN on 127.0.0.1, as in the image.
        via_env = health(env={"KCOORD_LISTEN": f"0.0.0.0:{port}", "PATH": "/usr/bin:/bin"})
        assert via_env.returncode == 0, via_env.stderr
    finally:
        assert server.stop() == 0
    down = health("--bootstrap", f"127.0.0.1:{port}")
    assert down.returncode == 1
    refused = f"kcoord health: 127.0.0.1:{port} not answering: [Errno 111] Connection refused"
    assert down.stderr.splitlines() == [refused]
    assert down.stdout == ""


def test_health_fails_against_a_listener_that_is_not_kafka() -> None:
    """A port that accepts and closes at once (say, another service on 9092) is not healthy."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def close_at_once() -> None:
            conn, _ = listener.accept()
            conn.close()

        thread = threading.Thread(target=close_at_once, daemon=True)
        thread.start()
        done = health("--bootstrap", f"127.0.0.1:{port}", "--timeout", "5")
        thread.join(timeout=10)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and "not answering" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
