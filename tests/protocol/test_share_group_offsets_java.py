"""The share-group offset APIs (90, 91, 92) encode byte for byte as Apache Kafka 4.3.1's own generated
classes do: kafka-python has no classes for them, so the cross-check is against the broker's jar
(tests/protocol/java/KafkaEncode.java, compiled into tmp_path), and our decoder reads Kafka's bytes back
to the same message. Skipped where there is no JDK or no cached Kafka jar (tests/oracle fetches it).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS
from tests import jvm
from tests.oracle.kafka import cache_dir

TOPIC_ID = uuid.UUID("3f1c2a8e-5b7d-4e21-9a3c-0d4e5f6a7b8c")

# (Kafka message name, api key, is request, version, our message)
CASES: list[tuple[str, int, bool, int, dict[str, Any]]] = (
    [
        (
            "DescribeShareGroupOffsetsRequest",
            90,
            True,
            v,
            {
                "groups": [
                    {"group_id": "g1", "topics": [{"topic_name": "t", "partitions": [0, 2]}]},
                    {"group_id": "g2", "topics": None},
                ]
            },
        )
        for v in (0, 1)
    ]
    + [
        (
            "DescribeShareGroupOffsetsResponse",
            90,
            False,
            v,
            {
                "throttle_time_ms": 7,
                "groups": [
                    {
                        "group_id": "g1",
                        "error_code": 0,
                        "error_message": None,
                        "topics": [
                            {
                                "topic_name": "t",
                                "topic_id": TOPIC_ID,
                                "partitions": [
                                    {
                                        "partition_index": 0,
                                        "start_offset": 42,
                                        "leader_epoch": 3,
                                        "error_code": 0,
                                        "error_message": None,
                                        **({"lag": 9} if v else {}),
                                    },
                                    {
                                        "partition_index": 2,
                                        "start_offset": -1,
                                        "leader_epoch": -1,
                                        "error_code": 3,
                                        "error_message": "no such partition",
                                        **({"lag": -1} if v else {}),
                                    },
                                ],
                            }
                        ],
                    },
                    {
                        "group_id": "g2",
                        "error_code": 69,
                        "error_message": "The group id does not exist.",
                        "topics": [],
                    },
                ],
            },
        )
        for v in (0, 1)
    ]
    + [
        (
            "AlterShareGroupOffsetsRequest",
            91,
            True,
            0,
            {
                "group_id": "g",
                "topics": [
                    {
                        "topic_name": "t",
                        "partitions": [
                            {"partition_index": 0, "start_offset": 5},
                            {"partition_index": 1, "start_offset": 0},
                        ],
                    }
                ],
            },
        ),
        (
            "AlterShareGroupOffsetsResponse",
            91,
            False,
            0,
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "responses": [
                    {
                        "topic_name": "t",
                        "topic_id": TOPIC_ID,
                        "partitions": [
                            {"partition_index": 0, "error_code": 0, "error_message": None},
                            {"partition_index": 1, "error_code": 68, "error_message": "not empty"},
                        ],
                    }
                ],
            },
        ),
        ("DeleteShareGroupOffsetsRequest", 92, True, 0, {"group_id": "g", "topics": [{"topic_name": "t"}]}),
        (
            "DeleteShareGroupOffsetsResponse",
            92,
            False,
            0,
            {
                "throttle_time_ms": 1,
                "error_code": 0,
                "error_message": None,
                "responses": [
                    {"topic_name": "t", "topic_id": TOPIC_ID, "error_code": 0, "error_message": None},
                    {
                        "topic_name": "u",
                        "topic_id": uuid.UUID(int=0),
                        "error_code": 3,
                        "error_message": "unknown",
                    },
                ],
            },
        ),
    ]
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _kafka_json(value: Any) -> Any:
    """Our message as Kafka's JSON converters read it: camelCase names, Kafka's base64 topic ids."""
    if isinstance(value, dict):
        return {_camel(key): _kafka_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_kafka_json(item) for item in value]
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    return value


@pytest.fixture(scope="module")
def kafka_encoded(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    jar = cache_dir() / "libs" / "kafka-clients-4.3.1.jar"
    if shutil.which("javac") is None or not jar.exists():
        pytest.skip("no JDK or no cached Kafka 4.3.1 jar")
    classpath = f"{cache_dir() / 'libs'}/*"
    build = jvm.compiled(Path(__file__).parent / "java" / "KafkaEncode.java", classpath)
    lines = "".join(
        f"{name} {version} {json.dumps(_kafka_json(message))}\n" for name, _, _, version, message in CASES
    )
    done = subprocess.run(
        ["java", *jvm.SHORT_FLAGS, "-cp", f"{build}:{classpath}", "KafkaEncode"],
        input=lines,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [bytes.fromhex(line) for line in done.stdout.split()]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c[0]}-v{c[3]}" for c in CASES])
def test_share_group_offsets_encode_as_kafka_does(kafka_encoded: list[bytes], index: int) -> None:
    _, api_key, is_request, version, message = CASES[index]
    schema = (REQUEST_SCHEMAS if is_request else RESPONSE_SCHEMAS)[api_key]
    codec = codec_for(schema, version)
    assert codec.build(message) == kafka_encoded[index]
    decoded = codec.parse(kafka_encoded[index])
    assert codec.build(decoded) == kafka_encoded[index]
