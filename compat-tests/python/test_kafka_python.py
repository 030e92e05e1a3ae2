"""kafka-python: producer and a consumer with assigned partitions."""
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

N = 1000


def test_produce_consume(bootstrap, topic_name):
    topic = topic_name("kpy")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    futures = [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2) for i in range(N)]
    producer.flush()
    offsets = [f.get(timeout=10) for f in futures]
    assert [m.offset for m in offsets if m.partition == 1] == list(range(N // 2))
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = {}
    for m in consumer:
        got[m.key.decode()] = (m.value.decode(), m.partition, m.offset)
        if len(got) == N:
            break
    consumer.close()
    assert len(got) == N
    for i in range(N):
        assert got[f"k{i}"] == (f"v{i}", i % 2, i // 2)


def test_consumer_group(bootstrap, topic_name):
    """kafka-python's group consumer reads every record and commits its offsets."""
    topic = topic_name("kpy-group")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(300):
        producer.send(topic, value=f"v{i}".encode())
    producer.flush()
    producer.close()
    group = f"g-{topic}"
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=15000)
    got = set()
    for m in consumer:
        got.add(m.value.decode())
        if len(got) == 300:
            break
    consumer.commit()
    consumer.close()
    assert len(got) == 300
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    offsets = admin.list_group_offsets(group)[group]
    admin.close()
    assert sum(o.offset for o in offsets.values()) == 300
