"""`kcoord` processes forked from a warm interpreter, for the suite's many server starts.

A run of the suite starts `kcoord serve` about 670 times and the `kcoord` command about 360 times. Each
start used to be a fresh interpreter importing kcoord (about 0.45 CPU-s: the codec's schemas, the
coordinators, aiohttp, cryptography), which on this 2-core machine was a fifth of the CPU the whole suite
burns. So each test process keeps one *fork server*: a child interpreter (`python -m tests.kcoord_fork`)
that imports what `kcoord serve` and the CLI import, once, and then forks a process per request. A forked
process is a real, separate kcoord process as before: its own PID (signals, kill -9, SIGSTOP and
/proc work on it), its own stdin, stdout and stderr, environment and working directory, and it runs the
same `kcoord.wiring.cli.main` that `python -m kcoord` runs. What it does not do again is import.
The entry point itself (`python -m kcoord`, the console script, the container's command) is still
started the old way by the tests that are about it (tests/server/test_lifecycle.py and the CLI and
container tests), and by anything that asks for a different interpreter or `PYTHON*` setting.

The fork server is the forked processes' parent, so it reaps them and reports each exit status to the
test process over its control socket; `ForkedProcess` is the `subprocess.Popen` subset the servers' code
uses (pid, poll, wait, send_signal, terminate, kill, returncode, stdout). When the test process exits,
the control socket closes and the fork server exits too.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# What a forked process would otherwise import at its start: the server, its logging, cluster mode, and
# the command-line tools (each import is optional: a missing extra only means that part is not warm).
WARM_MODULES = (
    "kcoord.wiring.cli",
    "kcoord.wiring.app",
    "kcoord.wiring.logs",
    "kcoord.cluster.node",
    "kcoord.client_cli",
)
DISABLE_ENV = "KCOORD_TESTS_NO_FORK_SERVER"  # set to anything: every start is a fresh interpreter


# -- the fork server's side ----------------------------------------------------------------------------


def _warm_up() -> None:
    import importlib

    for name in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _run_child(request: dict[str, Any], fds: list[int], control: socket.socket, wakeup: int) -> None:
    """In the forked process: become `python -m kcoord <args>` with the request's stdio, env and cwd;
    never returns (SystemExit unwinds to the interpreter's exit, which flushes and runs atexit)."""
    import random

    control.close()
    os.close(wakeup)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()  # else every forked process would draw the fork server's sequence
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), errors="replace")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True, errors="replace")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, errors="backslashreplace"
    )
    sys.argv = [str(REPO / "kcoord" / "__main__.py"), *request["args"]]
    from kcoord.wiring.cli import main

    raise SystemExit(main(request["args"]))


def _reap(control: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        control.sendall(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


def serve(control: socket.socket) -> None:
    """The fork server's loop: a request (a JSON line with 3 file descriptors: stdin, stdout, stderr)
    forks a process and answers its PID; a child's exit is reported as {"exit": pid, "code": code}."""
    _warm_up()
    read_wakeup, write_wakeup = os.pipe()
    os.set_blocking(read_wakeup, False)
    os.set_blocking(write_wakeup, False)
    signal.set_wakeup_fd(write_wakeup)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(read_wakeup, selectors.EVENT_READ)
    children: set[int] = set()
    pending, pending_fds = b"", []
    while True:
        for key, _ in selector.select():
            if key.fileobj == read_wakeup:
                _drain(read_wakeup)
                continue
            data, fds, _, _ = socket.recv_fds(control, 65536, 3)
            if not data:
                return  # the test process is gone
            pending, pending_fds = pending + data, pending_fds + fds
            if b"\n" not in pending:
                continue  # one request at a time: the rest of this one is on its way
            line, _, pending = pending.partition(b"\n")
            request, fds, pending_fds = json.loads(line), pending_fds, []
            pid = os.fork()
            if pid == 0:
                _run_child(request, fds, control, read_wakeup)
            for fd in fds:
                os.close(fd)
            children.add(pid)
            control.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _reap(control, children)


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 512):
                return
        except BlockingIOError:
            return


# -- the test process's side ---------------------------------------------------------------------------


class ForkedProcess:
    """A forked kcoord process, as much of `subprocess.Popen` as the suite uses."""

    def __init__(self, pid: int, stdout: io.TextIOWrapper | None, args: Sequence[str]) -> None:
        self.pid = pid
        self.args = list(args)
        self.stdin = None
        self.stdout = stdout
        self.stderr = None
        self.returncode: int | None = None
        self._exited = threading.Event()

    def _set_exit(self, code: int) -> None:
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # exited: its status is on its way
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The test process's handle on its fork server: started at the first request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._answers: list[int] = []
        self._answered = threading.Condition()
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._env: dict[str, str] = {}

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._env = dict(os.environ)
        subprocess.Popen(
            [sys.executable, "-m", "tests.kcoord_fork", str(theirs.fileno())],
            cwd=REPO,
            env=self._env,
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        threading.Thread(target=self._read, args=(ours,), daemon=True, name="kcoord-fork-server").start()
        return ours

    def _read(self, control: socket.socket) -> None:
        for line in control.makefile("rb"):
            message = json.loads(line)
            with self._answered:
                if "pid" in message:
                    self._answers.append(message["pid"])
                else:
                    child = self._children.pop(message["exit"], None)
                    if child is None:
                        self._early_exits[message["exit"]] = message["code"]
                    else:
                        child._set_exit(message["code"])
                self._answered.notify_all()

    def suits(self, env: Mapping[str, str]) -> bool:
        """Whether a process with `env` can be forked from the warm interpreter: not when the fork
        server is turned off, nor when an interpreter setting (PYTHON*) differs from the one it has."""
        if DISABLE_ENV in env:
            return False
        warm_env = self._env if self._control is not None else os.environ
        python = {k: v for k, v in env.items() if k.startswith("PYTHON")}
        return python == {k: v for k, v in warm_env.items() if k.startswith("PYTHON")}

    def spawn(
        self, args: Sequence[str], env: Mapping[str, str], cwd: Path, stdin: int, stdout: int, stderr: int
    ) -> ForkedProcess:
        """`python -m kcoord *args` forked, with these stdio descriptors (the caller closes its own)."""
        request = {"args": list(args), "env": dict(env), "cwd": str(cwd)}
        with self._lock:
            if self._control is None:
                self._control = self._start()
            with self._answered:
                socket.send_fds(
                    self._control, [json.dumps(request).encode() + b"\n"], [stdin, stdout, stderr]
                )
                if not self._answered.wait_for(lambda: bool(self._answers), timeout=30):
                    raise RuntimeError("the kcoord fork server did not answer")
                pid = self._answers.pop(0)
                process = ForkedProcess(pid, None, ["kcoord", *args])
                if pid in self._early_exits:
                    process._set_exit(self._early_exits.pop(pid))
                else:
                    self._children[pid] = process
        return process


_FORK_SERVER = ForkServer()


def is_kcoord_command(argv: Sequence[str]) -> bool:
    return list(argv[:3]) == [sys.executable, "-m", "kcoord"]


def popen_kcoord(argv: Sequence[str], env: Mapping[str, str], cwd: Path = REPO) -> ForkedProcess | None:
    """`[sys.executable, "-m", "kcoord", ...]` forked from the warm interpreter, stdin from /dev/null and
    stdout + stderr to one text pipe (as ServerProcess starts servers); None when it cannot be."""
    if not is_kcoord_command(argv) or not _FORK_SERVER.suits(env):
        return None
    read_end, write_end = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        process = _FORK_SERVER.spawn(argv[3:], env, cwd, devnull, write_end, write_end)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
        os.close(devnull)
    process.stdout = open(read_end, errors="replace")  # noqa: SIM115 - the reader thread owns it
    return process


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))


def run_command(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(argv, **kwargs)`, forked from the warm interpreter when argv is
    `[sys.executable, "-m", "kcoord", ...]` and the options are the ones the suite uses (cwd, env, input,
    timeout, check, text, capture_output, errors); anything else is a plain `subprocess.run`."""
    known = {"cwd", "env", "input", "timeout", "check", "text", "capture_output", "errors"}
    env = kwargs.get("env") or os.environ
    if not is_kcoord_command(argv) or set(kwargs) - known or not _FORK_SERVER.suits(env):
        return subprocess.run(argv, **kwargs)
    capture = bool(kwargs.get("capture_output"))
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        given = kwargs.get("input")
        if given is not None:
            stdin.write(given.encode() if isinstance(given, str) else given)
            stdin.seek(0)
        outputs = (out.fileno(), err.fileno()) if capture else (1, 2)  # else the test's own, as run does
        cwd = Path(kwargs.get("cwd") or os.getcwd())
        process = _FORK_SERVER.spawn(argv[3:], env, cwd, stdin.fileno(), *outputs)
        try:
            code = process.wait(kwargs.get("timeout"))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        captured = [_read_back(f, kwargs) if capture else None for f in (out, err)]
    done = subprocess.CompletedProcess(list(argv), code, *captured)
    if kwargs.get("check"):
        done.check_returncode()
    return done


def _read_back(file: Any, kwargs: Mapping[str, Any]) -> str | bytes:
    file.seek(0)
    data: bytes = file.read()
    return data.decode(errors=kwargs.get("errors") or "strict") if kwargs.get("text") else data
