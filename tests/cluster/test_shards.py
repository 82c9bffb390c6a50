"""Group ids map to shards exactly as Kafka maps them to `__consumer_offsets` partitions: the hash is
checked against a real JVM's `String.hashCode()` (tests/cluster/Hash.java, run by `java Hash.java`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.coordinator.runtime.shards import DEFAULT_NUM_SHARDS, java_string_hash, shard_of
from tests import jvm

HERE = Path(__file__).resolve().parent
INT32_MIN = -(1 << 31)


class JavaHash:
    """One `java Hash.java` process answering a line per string (its UTF-8 bytes in hex)."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            ["java", *jvm.SHORT_FLAGS, "-cp", str(jvm.compiled(HERE / "Hash.java")), "Hash"],
            cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def hash_code(self, s: str) -> int:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(s.encode().hex() + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        assert line, f"java Hash.java exited with {self._proc.wait(10)}"
        return int(line)

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)


@pytest.fixture(scope="module")
def java() -> Iterator[JavaHash]:
    if shutil.which("java") is None:
        if os.environ.get("KCOORD_CLUSTER_TESTS") == "required":
            pytest.fail("KCOORD_CLUSTER_TESTS=required but no java on PATH (apt-get install default-jdk)")
        pytest.skip("no java on PATH: the hash oracle needs a JDK (java Hash.java)")
    oracle = JavaHash()
    try:
        yield oracle
    finally:
        oracle.close()


# The notes' vectors, a string whose hash is Integer.MIN_VALUE (Utils.abs maps it to 0) and
# characters outside the BMP (two UTF-16 code units each in Java).
VECTORS = [
    ("my-group", 12),
    ("kafka-txn-0", 30),
    ("polygenelubricants", 0),
    ("", 0),
]


@pytest.mark.parametrize(("key", "shard"), VECTORS)
def test_known_vectors(key: str, shard: int) -> None:
    assert shard_of(key) == shard
    assert shard_of(key, DEFAULT_NUM_SHARDS) == shard


def test_min_value_hash_maps_to_shard_zero(java: JavaHash) -> None:
    assert java_string_hash("polygenelubricants") == INT32_MIN == java.hash_code("polygenelubricants")
    assert all(shard_of("polygenelubricants", n) == 0 for n in (1, 7, 50, 1000))


@pytest.mark.parametrize("key", ["my-group", "kafka-txn-0", "😀", "a😀b", "grüße-𝄞", "組-🎉-" * 20])
def test_vectors_match_java(java: JavaHash, key: str) -> None:
    assert java_string_hash(key) == java.hash_code(key)


def test_non_bmp_character_hashes_its_surrogate_pair() -> None:
    high, low = 0xD83D, 0xDE00  # U+1F600 in UTF-16
    assert java_string_hash("😀") == 31 * high + low


def test_shard_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        shard_of("g", 0)


KEYS = st.one_of(
    st.text(max_size=64),
    st.text(st.characters(min_codepoint=0x10000), max_size=16),  # only surrogate pairs in Java
    st.text(st.characters(max_codepoint=0x7F), min_size=1, max_size=255),  # typical group ids
)


@settings(max_examples=300, deadline=None)
@given(key=KEYS, num_shards=st.integers(min_value=1, max_value=1000))
def test_hash_and_shard_match_java(java: JavaHash, key: str, num_shards: int) -> None:
    expected = java.hash_code(key)
    assert java_string_hash(key) == expected
    assert -(1 << 31) <= expected < 1 << 31
    java_abs = 0 if expected == INT32_MIN else abs(expected)  # Utils.abs
    assert shard_of(key, num_shards) == java_abs % num_shards
