"""confluent-kafka (librdkafka) over TLS and SASL, run by secure.sh against the
secured broker (lib/broker.sh start_secure_broker): SASL_SSL with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 (admin, produce, a consumer group), SSL
with a client certificate, and the refusals (wrong password, unknown user,
no client certificate). The user alice/alice-secret exists for PLAIN (the
broker's JAAS config) and for both SCRAM mechanisms (secure.sh made her
with kafka-configs)."""
import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

ENV = os.environ
N = 500


def need(key):
    value = ENV.get(key)
    if not value:
        pytest.fail(f"{key} is not set: run this file with secure.sh")
    return value


def sasl_ssl(mech, user="alice", password="alice-secret"):
    return {"bootstrap.servers": need("STRAIT_SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": need("STRAIT_CA"), "sasl.mechanisms": mech,
            "sasl.username": user, "sasl.password": password}


def mtls():
    certs = os.path.dirname(need("STRAIT_CA"))
    return {"bootstrap.servers": need("STRAIT_SSL"), "security.protocol": "SSL",
            "ssl.ca.location": need("STRAIT_CA"),
            "ssl.certificate.location": os.path.join(certs, "client.pem"),
            "ssl.key.location": os.path.join(certs, "client.key")}


def round_trip(conf, topic):
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(timeout=20)
    assert topic in admin.list_topics(timeout=10).topics
    p = Producer({**conf, "acks": "all", "linger.ms": 5})
    errs = []
    for i in range(N):
        p.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 2,
                  on_delivery=lambda err, msg: errs.append(err))
    assert p.flush(30) == 0
    assert errs == [None] * N
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = {}
    deadline = time.monotonic() + 60
    while len(got) < N and time.monotonic() < deadline:  # bounded by the deadline
        m = c.poll(1.0)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got[m.key().decode()] = m.value().decode()
    c.commit(asynchronous=False)
    c.close()
    assert got == {f"k{i}": f"v{i}" for i in range(N)}


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_ssl_admin_produce_consume_group(topic_name, mech):
    round_trip(sasl_ssl(mech), topic_name(f"py-sasl-ssl-{mech.lower()}"))


def test_ssl_client_certificate_mtls_produce_consume_group(topic_name):
    round_trip(mtls(), topic_name("py-mtls"))


def client_errors(conf):
    """The errors a producer's error callback reports within 10 s of its
    first connection (it is called from poll)."""
    errors = []
    p = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:  # bounded by the deadline
        p.poll(0.5)
    return errors


@pytest.mark.parametrize("mech,user", [("PLAIN", "alice"), ("SCRAM-SHA-256", "alice"),
                                       ("SCRAM-SHA-512", "alice"), ("SCRAM-SHA-256", "nobody")])
def test_sasl_ssl_wrong_password_authentication_failure(mech, user):
    errors = client_errors(sasl_ssl(mech, user, "wrong-password"))
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any("Authentication failed" in e.str() for e in errors), errors


def test_ssl_without_client_certificate_refused():
    conf = mtls()
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    errors = client_errors(conf)
    assert errors, "no error reported"
    assert any(e.code() in (KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN) for e in errors), errors
