"""Class-data sharing archives (AppCDS) for the JVMs the tests start again and again: Kafka's broker and
its storage tool (tests/oracle/kafka.py, tests/share/kafka_share.py) and the Java share clients
(tests/share/drivers.py).

A JVM spends most of a short life's CPU loading, parsing and verifying the classes of its jars (Kafka's
broker ~5,000, its client ~2,000); an archive holds them ready to map. Measured on the 2-core machine
(OpenJDK 17, CPU = user+sys of the JVM): a ShareDriver consumer from start to ten records and exit
0.75 -> 0.50 CPU-s, its Admin to ready 0.51 -> 0.22, the broker to ready 2.6 -> 1.9 and the storage
format 0.82 -> 0.58.

An archive is dumped at the exit of the first JVM that runs without one (JDK 13+'s dynamic archive,
`-XX:ArchiveClassesAtExit`: the classes that run loaded), written under a temporary name and renamed
into place only after a clean exit (0, or 143 after SIGTERM), so a JVM killed mid-dump leaves nothing.
One JVM at a time on the machine dumps a given archive (a non-blocking file lock held until it exits);
the others run without one meanwhile. Archives live next to Kafka's jars (`~/.cache/kcoord/cds`, or
under `$KCOORD_ORACLE_CACHE`) and are named by what they depend on: the JVM binary, the flags, and the
class path's files with their sizes and times. A JVM that finds an archive it cannot use (another
build of the JDK) ignores it, as `-Xshare:auto` does; its CDS log lines are off so that a client's
stdout stays JSON.

The JVMs a test starts once to read an answer (a hash oracle, a byte encoder, a client run) take
`SHORT_FLAGS`, and their Java sources are compiled once per machine and version (`compiled`), not at
every run by `java File.java`'s in-memory javac (0.6 CPU-s for Hash.java, against 0.03 to run it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SHORT_FLAGS", "Archive", "archive", "archive_dir", "compiled"]

# C1 only on one compiler thread (a JVM that lives seconds never profits from C2), the serial collector
# (no GC threads competing for two cores), no hsperfdata file sampled and written every tick.
SHORT_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # the default log goes to stdout
CLEAN_EXITS = (0, 143)  # System.exit(0) or a normal return; SIGTERM's shutdown hooks ran (128 + 15)


def archive_dir() -> Path:
    root = os.environ.get("KCOORD_ORACLE_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "kcoord") / "cds"


def _entries(classpath: str) -> Iterable[Path]:
    for part in classpath.split(os.pathsep):
        if part.endswith("/*"):  # the launcher expands a directory wildcard to its jars
            yield from sorted(Path(part[:-2]).glob("*.jar"))
        else:
            yield Path(part)


def _digest(name: str, java: str, flags: Iterable[str], classpath: str) -> str:
    h = hashlib.sha256()
    binary = Path(shutil.which(java) or java).resolve()
    for text in (name, str(binary), *flags, classpath):
        h.update(text.encode() + b"\0")
    for path in (binary, *_entries(classpath)):
        with contextlib.suppress(OSError):
            stat = path.stat()
            h.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


@dataclass
class Archive:
    """The flags for one JVM start, and what to do once that JVM has exited (`done`)."""

    flags: list[str]
    _dump: Path | None = None
    _final: Path | None = None
    _lock: int | None = field(default=None, repr=False)

    def done(self, returncode: int | None) -> None:
        """A dump this JVM wrote on a clean exit becomes the archive; the lock is released either way."""
        try:
            if self._dump is not None and self._final is not None and self._dump.exists():
                if returncode in CLEAN_EXITS and self._dump.stat().st_size > 0:
                    os.replace(self._dump, self._final)
                else:
                    self._dump.unlink(missing_ok=True)
        finally:
            if self._lock is not None:
                os.close(self._lock)  # closing the descriptor drops the flock
                self._lock = None


def archive(name: str, java: str, flags: Iterable[str], classpath: str) -> Archive:
    """Flags that use the archive of (`name`, JVM, flags, class path), or dump it when there is none
    yet and no other JVM is dumping it; no archive flags when another one is."""
    flags = tuple(flags)
    base = archive_dir() / f"{name}-{_digest(name, java, flags, classpath)}"
    final = base.with_suffix(".jsa")
    if final.exists():
        return Archive([f"-XX:SharedArchiveFile={final}", *QUIET])
    final.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(base.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return Archive([])
    if final.exists():  # dumped by the JVM that held the lock just before
        os.close(lock)
        return Archive([f"-XX:SharedArchiveFile={final}", *QUIET])
    dump = base.with_name(f"{base.name}.{os.getpid()}.dump")
    dump.unlink(missing_ok=True)
    return Archive([f"-XX:ArchiveClassesAtExit={dump}", *QUIET], dump, final, lock)


def compiled(source: Path, classpath: str = "") -> Path:
    """The directory of `source`'s classes, compiled by javac (on SHORT_FLAGS: 1.4 -> 0.8 CPU-s for
    KafkaEncode.java) the first time this text is compiled against these jars on this machine."""
    key = _digest(source.name + "\0" + source.read_text(), "javac", (), classpath)
    out = archive_dir().parent / "javac" / f"{source.stem}-{key}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(out.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process compiles, the others wait for its classes
        if not out.exists():
            tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            quick = [f"-J{flag}" for flag in SHORT_FLAGS]
            argv = ["javac", *quick, "-d", str(tmp), *(["-cp", classpath] if classpath else []), str(source)]
            built = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
            assert built.returncode == 0, f"javac {source.name} failed:\n{built.stderr[-3000:]}"
            tmp.rename(out)
    finally:
        os.close(lock)
    return out
