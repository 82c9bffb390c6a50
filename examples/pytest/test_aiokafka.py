"""aiokafka in the test's own event loop: server calls that wait are awaited through `kcoord.aio`,
so the consumer keeps heartbeating while the test waits."""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


@pytest.mark.asyncio
async def test_an_async_consumer_group(kcoord, kcoord_topic, kcoord_group):
    producer = AIOKafkaProducer(bootstrap_servers=kcoord.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(kcoord_topic, b"hello")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        kcoord_topic,
        group_id=kcoord_group,
        bootstrap_servers=kcoord.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        message = await asyncio.wait_for(consumer.getone(), 30)
        assert message.value == b"hello"
        group = await kcoord.aio.wait_stable(kcoord_group)
        assert len(group.members) == 1
        await consumer.commit()
        assert await kcoord.aio.committed(kcoord_group) == {(kcoord_topic, 0): 1}
    finally:
        await consumer.stop()
