"""Share groups (KIP-932, issue 34 item 5) with real clients, against Apache Kafka 4.3.1 and kcoord.

- clients/ShareDriver.java: Kafka 4.3.1's KafkaShareConsumer and Admin (javac'd once into
  ~/.cache/kcoord/share-driver-jar/<source digest>, a jar); clients/confluent_share.py: confluent-kafka's
  ShareConsumer and producer. Both print JSON lines (drivers.py reads them).
- kafka_share.py: the Kafka node (tests/oracle's jars) with short-lock settings, restartable.
- test_share_consumers.py, test_share_restart.py: the scenarios, each on both brokers (conftest.py).
- test_share_partition_model.py: a hypothesis model of one share partition against the tenant.
"""
