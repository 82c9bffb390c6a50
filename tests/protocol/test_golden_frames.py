"""Request frames captured from real librdkafka (confluent-kafka) and aiokafka clients
(`tests/protocol/golden/capture.py`) decode to the expected message and re-encode byte for byte."""

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
    client, api_key, version = path.stem.rsplit("-", 2)
    assert (header.request_api_key, header.request_api_version) == (int(api_key), int(version[1:]))
    assert header.client_id == "golden"
    if header.request_api_key in GROUP_APIS:
        # OffsetFetch v8+ batches groups (KIP-709); every other group API names one group
        groups = [g["group_id"] for g in body["groups"]] if body.get("groups") else [body["group_id"]]
        assert groups == ["golden-ck" if client == "librdkafka" else "golden-aio"]
    again = encode_request(
        header.request_api_key, header.request_api_version, header.correlation_id, body, header.client_id
    )
    assert again[4:] == frame


def test_golden_frames_cover_both_clients_group_apis() -> None:
    names = {p.stem for p in GOLDEN}
    for client in ("librdkafka", "aiokafka"):
        for api in ("11-v5", "14-v3", "13-v1"):
            assert f"{client}-{api}" in names
