"""Inner suite: a test that fails on purpose, so the outer test can read its report."""

from kafka import KafkaProducer


def test_failure_report_carries_the_server_log(kcoord, kcoord_topic):
    producer = KafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    producer.send(kcoord_topic, b"x").get(timeout=10)
    producer.close()
    assert kcoord_topic == "a deliberately wrong name"
