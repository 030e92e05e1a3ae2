"""confluent-kafka (librdkafka): admin, producer with every codec, consumer."""
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

N = 2000


def create(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    fut[topic].result(timeout=10)
    return admin


def test_admin_create_list_delete(bootstrap, topic_name):
    topic = topic_name("py-admin")
    admin = create(bootstrap, topic, 3)
    md = admin.list_topics(timeout=10)
    assert topic in md.topics
    assert len(md.topics[topic].partitions) == 3
    assert len(md.brokers) == 1
    again = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    with pytest.raises(KafkaException) as exc:
        again[topic].result(timeout=10)
    assert exc.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    admin.delete_topics([topic])[topic].result(timeout=10)
    assert topic not in admin.list_topics(timeout=10).topics


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume(bootstrap, topic_name, codec):
    topic = topic_name(f"py-{codec}")
    create(bootstrap, topic, 3)
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": "all", "linger.ms": 5})
    delivered = []
    for i in range(N):
        p.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 3, headers=[("i", str(i))],
                  on_delivery=lambda err, msg: delivered.append((err, msg.partition(), msg.offset())))
    assert p.flush(30) == 0
    assert all(err is None for err, _, _ in delivered)
    assert sorted(o for _, part, o in delivered if part == 0) == list(range((N + 2) // 3))

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got = {}
    while len(got) < N:
        msgs = c.consume(1000, timeout=10)
        assert msgs, f"no records after {len(got)}"
        for m in msgs:
            assert m.error() is None, m.error()
            got[m.key().decode()] = (m.value().decode(), m.partition(), m.offset(), dict(m.headers())["i"])
    c.close()
    for i in range(N):
        assert got[f"k{i}"] == (f"v{i}", i % 3, i // 3, str(i).encode())


def test_consumer_group_commits(bootstrap, topic_name):
    """A librdkafka consumer group reads a topic, commits, and a new member resumes after the commit."""
    topic = topic_name("py-group")
    create(bootstrap, topic, 3)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(300):
        p.produce(topic, key=f"k{i}", value=f"v{i}")
    assert p.flush(30) == 0
    group = f"g-{topic}"
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    c = Consumer(conf)
    c.subscribe([topic])
    seen = set()
    while len(seen) < 200:
        msgs = c.consume(200 - len(seen), timeout=10)
        assert msgs, f"no records after {len(seen)}"
        for m in msgs:
            assert m.error() is None, m.error()
            seen.add(m.value().decode())
        c.commit(asynchronous=False)
    committed = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    # A partition nothing was read from has no committed offset (-1001).
    assert sum(tp.offset for tp in committed if tp.offset >= 0) == len(seen)
    c.close()

    c = Consumer(conf)
    c.subscribe([topic])
    rest = set()
    while len(seen) + len(rest) < 300:
        msgs = c.consume(300, timeout=10)
        assert msgs, f"no records after {len(rest)} more"
        for m in msgs:
            assert m.error() is None, m.error()
            rest.add(m.value().decode())
    c.close()
    assert not (seen & rest), "records delivered again after their offsets were committed"
    assert len(seen | rest) == 300
