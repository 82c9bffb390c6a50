"""Loopback ports for the servers tests start and restart, safe while other test processes run.

A port the kernel picks (bind to port 0) comes from its ephemeral range, the same range every outgoing
connection takes its source port from. A test that stops a server and starts it again on the same port
(clients must find it at the same address) can then lose the port in between: under pytest-xdist
another worker's client connection or server takes it, and the restart fails with "address already in
use". So the ports handed out here lie outside the ephemeral range
(/proc/sys/net/ipv4/ip_local_port_range), where the kernel never picks one by itself, and each is
reserved for the process that took it, for that process's lifetime, with a byte-range lock on one
shared file (byte N for port N; the kernel drops the locks when the process exits, however it exits).
No two test processes on the machine (workers of one run, or concurrent runs) hand out the same port;
within a process, a port is handed out once.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import threading
from collections import deque
from pathlib import Path

__all__ = ["free_port"]

LOWEST = 10000  # below: the well-known and registered ports other software listens on
LOCK_FILE = Path(tempfile.gettempdir()) / "kcoord-test-ports.lock"

_lock = threading.Lock()
_handed_out: set[int] = set()
_fd: int | None = None
_candidates: deque[int] = deque()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _ports() -> list[int]:
    """Every candidate port, starting at a random place so concurrent processes rarely meet."""
    low, high = _ephemeral_range()
    ports = [p for p in range(LOWEST, 65536) if not low <= p <= high]
    start = random.randrange(len(ports))
    return ports[start:] + ports[:start]


def _reserve(port: int) -> bool:
    """Lock byte `port` of the shared file for this process; False when another process holds it."""
    global _fd
    if _fd is None:
        _fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.lockf(_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
    except OSError:
        return False
    return True


def _bindable(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port now (SO_REUSEADDR, as servers bind: TIME_WAIT is no obstacle)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A free loopback port outside the ephemeral range, reserved for this process."""
    with _lock:
        if not _candidates:
            _candidates.extend(_ports())
        for _ in range(len(_candidates)):
            port = _candidates.popleft()
            if port not in _handed_out and _reserve(port) and _bindable(port):
                _handed_out.add(port)
                return port
    raise RuntimeError("no free loopback port outside the ephemeral range")
