"""The registry and the ApiVersions table agree with the schemas."""

from kcoord.protocol.api_versions_table import SERVED_VERSIONS
from kcoord.protocol.codecs import codec_for
from kcoord.protocol.messages import REQUEST_SCHEMAS, RESPONSE_SCHEMAS


def test_every_served_version_is_defined_for_request_and_response() -> None:
    for api_key, (low, high) in SERVED_VERSIONS.items():
        assert low <= high
        for version in range(low, high + 1):
            assert version in REQUEST_SCHEMAS[api_key].versions, (api_key, version)
            assert version in RESPONSE_SCHEMAS[api_key].versions, (api_key, version)


# Floors (api_versions_table.py): Produce and Fetch start at the first magic-2 versions; the others are
# Kafka 4's (KIP-896 removed the older versions, which stay defined for the codec's own tests).
FIRST_SERVED = {0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 27: 1, 29: 1, 30: 1, 31: 1, 32: 1, 35: 1}
# Defined before their handlers exist (issue 24, transactions): not advertised until the server answers
# them. Whoever enables one in api_versions_table.py removes it here.
NOT_YET_SERVED: frozenset[int] = frozenset()
# Served short of the newest defined version: InitProducerId v6 (KIP-939), which Kafka 4.3 marks
# `latestVersionUnstable` and does not advertise.
LAST_SERVED = {22: 5}


def test_every_defined_api_is_served_over_its_whole_range() -> None:
    assert set(REQUEST_SCHEMAS) == set(RESPONSE_SCHEMAS)
    assert set(SERVED_VERSIONS) == set(REQUEST_SCHEMAS) - NOT_YET_SERVED
    for api_key, schema in REQUEST_SCHEMAS.items():
        first = FIRST_SERVED.get(api_key, schema.versions[0])
        if api_key not in NOT_YET_SERVED:
            assert SERVED_VERSIONS[api_key] == (first, LAST_SERVED.get(api_key, schema.versions[-1]))
        assert RESPONSE_SCHEMAS[api_key].versions == schema.versions
        assert RESPONSE_SCHEMAS[api_key].flexible_since == schema.flexible_since
        assert schema.name.endswith("Request") and RESPONSE_SCHEMAS[api_key].name.endswith("Response")


def test_group_apis_keep_librdkafka_non_flexible_versions() -> None:
    """librdkafka caps JoinGroup 5, SyncGroup 3, Heartbeat 3, LeaveGroup 1, FindCoordinator 2
    (kafka-group-protocol.md section 10, row 3): they must be served, non-flexible."""
    for api_key, version in {11: 5, 14: 3, 12: 3, 13: 1, 10: 2}.items():
        low, high = SERVED_VERSIONS[api_key]
        assert low <= version <= high
        assert REQUEST_SCHEMAS[api_key].flexible_since > version


def test_an_empty_mapping_encodes_as_all_defaults() -> None:
    """Architecture contract: a missing key means the field's default, and decoding yields every field."""
    for schemas in (REQUEST_SCHEMAS, RESPONSE_SCHEMAS):
        for schema in schemas.values():
            for version in schema.versions:
                decoded = codec_for(schema, version).parse(codec_for(schema, version).build({}))
                assert decoded == {field.name: field.default for field in schema.fields}, (
                    schema.name,
                    version,
                )


def test_fetch_serves_topic_ids_and_metadata_carries_them() -> None:
    # Fetch v13+ names topics by id: only sound because Metadata v10+ returns the (durable) ids.
    assert SERVED_VERSIONS[1] == (4, 18)
    assert SERVED_VERSIONS[3][1] >= 10
