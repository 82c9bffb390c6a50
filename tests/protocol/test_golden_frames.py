"""Request frames captured from real librdkafka (confluent-kafka), aiokafka and kafka-python clients
(`tests/protocol/golden/capture.py`: consumer groups, producers and consumers, admin calls) decode to
the expected message and re-encode byte for byte; bytes a client leaves after a whole body are
ignored, as Kafka ignores them."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.frames import decode_request, encode_request

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.bin"))
GROUP_APIS = {8, 9, 11, 12, 13, 14}


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_frame_decodes_and_reencodes_identically(path: Path) -> None:
    frame = path.read_bytes()
    header, body = decode_request(frame)
    prefix, api_key, version = path.stem.rsplit("-", 2)
    client = prefix.removesuffix("-trailing").removesuffix("-data").removesuffix("-admin")
    assert (header.request_api_key, header.request_api_version) == (int(api_key), int(version[1:]))
    assert header.client_id == "golden"
    if header.request_api_key in GROUP_APIS:
        # OffsetFetch v8+ batches groups (KIP-709); every other group API names one group
        groups = [g["group_id"] for g in body["groups"]] if body.get("groups") else [body["group_id"]]
        assert groups == [GROUP_IDS[client]]
    again = encode_request(
        header.request_api_key, header.request_api_version, header.correlation_id, body, header.client_id
    )[4:]
    trailing = frame[len(again) :]
    assert frame[: len(again)] == again
    assert trailing == TRAILING.get(path.stem, b"")


GROUP_IDS = {"librdkafka": "golden-ck", "aiokafka": "golden-aio", "kafka-python": "golden-kpy"}
# librdkafka's Metadata v12 for all topics writes a compact null array (one byte) into the 4 bytes it
# reserved for an array length, so Kafka's parser (and ours) reads the placeholder's zeros as the
# following booleans and tag count, and the last 3 bytes (auto-create true, false, no tags) are left.
TRAILING = {"librdkafka-admin-trailing-3-v12": b"\x01\x00\x00"}


def test_admin_and_data_frames_cover_what_clients_send_at_startup() -> None:
    names = {p.stem for p in GOLDEN}
    for api in ("3-v12", "trailing-3-v12", "19-v4", "32-v1", "44-v1", "21-v2"):
        assert f"librdkafka-admin-{api}" in names
    for api in ("0-v10", "1-v12", "2-v7", "22-v4"):
        assert f"librdkafka-data-{api}" in names
    assert {"aiokafka-data-0-v7", "kafka-python-data-0-v9", "kafka-python-admin-60-v1"} <= names


def test_golden_frames_cover_both_clients_group_apis() -> None:
    names = {p.stem for p in GOLDEN}
    for client in ("librdkafka", "aiokafka"):
        for api in ("11-v5", "14-v3", "13-v1"):
            assert f"{client}-{api}" in names
