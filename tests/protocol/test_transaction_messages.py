"""Wire facts of the transaction APIs (issue 24) that the generic round trips cannot see.

The generic tests (round trips, construct-vs-codegen, kafka-python cross-check) cover every version
kafka-python 3.0.12 knows; it has no WriteTxnMarkers v0 (Kafka 4.0 removed it), so v0's bytes are
written out here by hand from Kafka's non-flexible layout.
"""

import struct

from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse

from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS

ADD_PARTITIONS_TO_TXN, END_TXN, WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS, API_VERSIONS = 24, 26, 27, 61, 18


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_write_txn_markers_v0_is_the_non_flexible_layout() -> None:
    marker = {
        "producer_id": 7,
        "producer_epoch": 3,
        "transaction_result": False,
        "topics": [{"name": "t", "partition_indexes": [0, 2]}],
        "coordinator_epoch": 5,
    }
    expected = (
        struct.pack(">i", 1)
        + struct.pack(">qhb", 7, 3, 0)
        + struct.pack(">i", 1)
        + _string("t")
        + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">i", 5)
    )
    codec = codec_for(REQUEST_SCHEMAS[WRITE_TXN_MARKERS], 0)
    assert codec.build({"markers": [marker]}) == expected
    assert codec.parse(expected)["markers"] == [{**marker, "transaction_version": 0}]


def test_add_partitions_to_txn_switches_to_the_batched_form_at_v4() -> None:
    schema = REQUEST_SCHEMAS[ADD_PARTITIONS_TO_TXN]
    topics = [{"name": "t", "partitions": [1]}]
    v3 = codec_for(schema, 3).parse(
        codec_for(schema, 3).build(
            {
                "v3_and_below_transactional_id": "tx",
                "v3_and_below_producer_id": 9,
                "v3_and_below_producer_epoch": 1,
                "v3_and_below_topics": topics,
            }
        )
    )
    assert (v3["v3_and_below_transactional_id"], v3["transactions"]) == ("tx", [])
    transaction = {"transactional_id": "tx", "producer_id": 9, "producer_epoch": 1, "verify_only": True}
    v4 = codec_for(schema, 4).parse(
        codec_for(schema, 4).build({"transactions": [{**transaction, "topics": topics}]})
    )
    assert v4["transactions"] == [{**transaction, "topics": topics}]
    assert v4["v3_and_below_topics"] == []


def test_end_txn_answers_the_next_producer_id_and_epoch_only_from_v5() -> None:
    schema = RESPONSE_SCHEMAS[END_TXN]
    answer = {"error_code": 0, "producer_id": 12, "producer_epoch": 4}
    assert codec_for(schema, 5).parse(codec_for(schema, 5).build(answer))["producer_id"] == 12
    v4 = codec_for(schema, 4).parse(codec_for(schema, 4).build({"error_code": 0}))
    assert (v4["producer_id"], v4["producer_epoch"]) == (-1, -1)


def test_describe_producers_epoch_is_an_int32() -> None:
    producer = {"producer_id": 1, "producer_epoch": 40000, "coordinator_epoch": 0}
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "active_producers": [producer]}]}]}
    codec = codec_for(RESPONSE_SCHEMAS[DESCRIBE_PRODUCERS], 0)
    active = codec.parse(codec.build(body))["topics"][0]["partitions"][0]["active_producers"][0]
    assert active["producer_epoch"] == 40000
    assert (active["last_sequence"], active["last_timestamp"], active["current_txn_start_offset"]) == (
        -1,
        -1,
        -1,
    )


def test_api_versions_carries_the_finalized_transaction_version_feature() -> None:
    """What makes a Kafka 4 client use transactions V2: `transaction.version` finalized at level 2."""
    body = {
        "error_code": 0,
        "api_keys": [{"api_key": 26, "min_version": 0, "max_version": 5}],
        "supported_features": [{"name": "transaction.version", "min_version": 0, "max_version": 2}],
        "finalized_features_epoch": 1,
        "finalized_features": [
            {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2}
        ],
    }
    encoded = codec_for(RESPONSE_SCHEMAS[API_VERSIONS], 3).build(body)
    decoded = KpApiVersionsResponse.decode(encoded, version=3)
    assert decoded.finalized_features_epoch == 1
    assert [(f.name, f.max_version_level) for f in decoded.finalized_features] == [("transaction.version", 2)]
    assert [(f.name, f.max_version) for f in decoded.supported_features] == [("transaction.version", 2)]
