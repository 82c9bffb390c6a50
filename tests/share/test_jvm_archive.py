"""tests/jvm.py's class-data archives with a real JVM: dumped at the first clean exit, mapped by the next
JVM (its class comes from the archive, its stdout is the program's alone), never kept from a killed JVM,
dumped by one JVM at a time, and named anew when a jar changes."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests import jvm

PROGRAM = """public class Hello {
    public static void main(String[] args) throws Exception {
        if (args.length > 0) System.in.read();  // "wait": until stdin ends or the JVM is killed
        System.out.println("hello");
    }
}
"""
FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")


@pytest.fixture
def hello_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A one-class program's jar; archives under tmp_path, not the machine's cache."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("needs a JDK (java and javac on PATH)")
    monkeypatch.setenv("KCOORD_ORACLE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "Hello.java").write_text(PROGRAM)
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(classes), str(tmp_path / "Hello.java")], check=True, timeout=120)
    jar = tmp_path / "hello.jar"
    with zipfile.ZipFile(jar, "w") as out:
        out.write(classes / "Hello.class", "Hello.class")
    return str(jar)


def _run(cds: jvm.Archive, jar: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["java", *FLAGS, *cds.flags, *extra, "-cp", jar, "Hello"]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    cds.done(ran.returncode)
    return ran


def _archives() -> list[str]:
    return sorted(p.name for p in jvm.archive_dir().iterdir() if not p.name.endswith(".lock"))


def test_the_first_clean_exit_dumps_the_archive_the_next_jvm_maps(hello_jar: str) -> None:
    first = jvm.archive("hello", "java", FLAGS, hello_jar)
    assert any(f.startswith("-XX:ArchiveClassesAtExit=") for f in first.flags)
    assert _run(first, hello_jar).stdout == "hello\n"
    (dumped,) = _archives()
    assert dumped.startswith("hello-") and dumped.endswith(".jsa")

    second = jvm.archive("hello", "java", FLAGS, hello_jar)
    assert second.flags[0] == f"-XX:SharedArchiveFile={jvm.archive_dir() / dumped}"
    assert _run(second, hello_jar).stdout == "hello\n", "a CDS log line reached stdout"
    loaded = _run(jvm.archive("hello", "java", FLAGS, hello_jar), hello_jar, "-Xlog:class+load=info")
    (line,) = [line for line in loaded.stdout.splitlines() if " Hello source:" in line]
    assert "shared objects file" in line, line
    assert _archives() == [dumped]


def test_a_killed_jvm_leaves_no_archive_and_the_next_one_dumps(hello_jar: str) -> None:
    cds = jvm.archive("hello", "java", FLAGS, hello_jar)
    argv = ["java", *FLAGS, *cds.flags, "-cp", hello_jar, "Hello", "wait"]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        proc.kill()
    finally:
        proc.wait(30)
    cds.done(proc.returncode)
    assert _archives() == []
    again = jvm.archive("hello", "java", FLAGS, hello_jar)
    assert any(f.startswith("-XX:ArchiveClassesAtExit=") for f in again.flags), "the lock was kept"
    again.done(None)


def test_one_jvm_at_a_time_dumps_an_archive(hello_jar: str) -> None:
    dumping = jvm.archive("hello", "java", FLAGS, hello_jar)
    meanwhile = jvm.archive("hello", "java", FLAGS, hello_jar)
    assert meanwhile.flags == []
    assert _run(meanwhile, hello_jar).stdout == "hello\n"
    assert _archives() == []
    assert _run(dumping, hello_jar).stdout == "hello\n"
    assert len(_archives()) == 1


def test_a_changed_jar_gets_an_archive_of_its_own(hello_jar: str) -> None:
    _run(jvm.archive("hello", "java", FLAGS, hello_jar), hello_jar)
    with zipfile.ZipFile(hello_jar, "a") as out:
        out.writestr("README", "a jar one entry longer")
    changed = jvm.archive("hello", "java", FLAGS, hello_jar)
    assert any(f.startswith("-XX:ArchiveClassesAtExit=") for f in changed.flags)
    assert _run(changed, hello_jar).stdout == "hello\n"
    assert len(_archives()) == 2
