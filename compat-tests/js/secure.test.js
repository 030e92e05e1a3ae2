// kafkajs over TLS and SASL, run by secure.sh against the secured broker
// (lib/broker.sh start_secure_broker): SCRAM-SHA-256 and SCRAM-SHA-512 on
// the SASL_SSL listener (ssl: {ca}), admin, produce and a consumer group;
// a wrong password is kafkajs's KafkaJSSASLAuthenticationError.
const { test } = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const fs = require('node:fs');
const { Kafka, logLevel } = require('kafkajs');

function env(key) {
  const v = process.env[key];
  if (!v) throw new Error(`${key} is not set: run this file with secure.sh`);
  return v;
}
const client = (mechanism, password = 'alice-secret') => new Kafka({
  clientId: 'strait-compat-secure',
  brokers: [env('STRAIT_SASL_SSL')],
  ssl: { ca: [fs.readFileSync(env('STRAIT_CA'), 'utf8')] },
  sasl: { mechanism, username: 'alice', password },
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 },
});
const name = (p) => `${p}-${crypto.randomBytes(4).toString('hex')}`;

for (const mechanism of ['scram-sha-256', 'scram-sha-512']) {
  test(`SASL_SSL ${mechanism}: admin, produce and consume in a group`, async () => {
    const kafka = client(mechanism);
    const topic = name(`js-${mechanism}`);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    assert.ok((await admin.listTopics()).includes(topic));
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const messages = [];
    for (let i = 0; i < 200; i++) messages.push({ key: `k${i}`, value: `v${i}`, partition: i % 2 });
    const res = await producer.send({ topic, acks: -1, messages });
    assert.deepStrictEqual(res.map((r) => r.errorCode), [0, 0]);
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: `g-${topic}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen = new Map();
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`consumed ${seen.size} of 200`)), 60000);
        consumer.run({
          eachMessage: async ({ message }) => {
            seen.set(message.key.toString(), message.value.toString());
            if (seen.size === 200) { clearTimeout(timer); resolve(); }
          },
        });
      });
    } finally {
      await consumer.disconnect();
    }
    for (let i = 0; i < 200; i++) assert.strictEqual(seen.get(`k${i}`), `v${i}`);
  });

  test(`SASL_SSL ${mechanism}: a wrong password is an authentication failure`, async () => {
    const admin = client(mechanism, 'wrong-password').admin();
    await assert.rejects(admin.connect(), (err) => {
      assert.strictEqual(err.name, 'KafkaJSSASLAuthenticationError', `${err.name}: ${err.message}`);
      assert.match(err.message, /Authentication failed/);
      return true;
    });
    await admin.disconnect();
  });
}
