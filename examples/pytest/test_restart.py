"""A dedicated server with its own settings (`kcoord serve` flags as keywords) and a data directory
that outlives restarts and crashes."""

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata


def test_committed_offsets_survive_a_restart_and_a_crash(kcoord_factory, kcoord_topic, kcoord_group):
    server = kcoord_factory(fsync="always")  # `kcoord serve --fsync always`
    producer = KafkaProducer(bootstrap_servers=server.bootstrap_servers, acks="all")
    producer.send(kcoord_topic, b"kept", partition=0).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=server.bootstrap_servers, group_id=kcoord_group, enable_auto_commit=False
    )
    consumer.commit({TopicPartition(kcoord_topic, 0): OffsetAndMetadata(1, "", -1)})
    consumer.close()

    server.restart()  # clean: same port, same data directory
    assert server.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    server.kill()  # a crash, as kill -9: only what was durable comes back
    server.restart()
    assert server.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    assert [r.value for r in server.records(kcoord_topic)] == [b"kept"]
