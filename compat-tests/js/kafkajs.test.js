// kafkajs: admin (topics, metadata), producer with gzip and none, and a
// consumer reading the partitions back. Groups come with the coordinator.
const { test } = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const kafka = new Kafka({
  clientId: 'strait-compat',
  brokers: [process.env.STRAIT_BOOTSTRAP || '127.0.0.1:9092'],
  logLevel: logLevel.NOTHING,
});
const name = (p) => `${p}-${crypto.randomBytes(4).toString('hex')}`;

test('admin creates, lists, describes and deletes topics', async () => {
  const admin = kafka.admin();
  await admin.connect();
  const topic = name('js-admin');
  assert.strictEqual(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true }), true);
  assert.ok((await admin.listTopics()).includes(topic));
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  assert.strictEqual(md.topics[0].partitions.length, 3);
  const offsets = await admin.fetchTopicOffsets(topic);
  assert.deepStrictEqual(offsets.map((o) => o.offset), ['0', '0', '0']);
  await admin.deleteTopics({ topics: [topic] });
  assert.ok(!(await admin.listTopics()).includes(topic));
  await admin.disconnect();
});

for (const [codecName, codec] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
  test(`produce with ${codecName} and consume in a group`, async () => {
    const topic = name(`js-${codecName}`);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const messages = [];
    for (let i = 0; i < 500; i++) {
      messages.push({ key: `k${i}`, value: `v${i}`, partition: i % 2, headers: { i: `${i}` } });
    }
    const res = await producer.send({ topic, acks: -1, compression: codec, messages });
    assert.deepStrictEqual(res.map((r) => r.errorCode), [0, 0]);
    await producer.disconnect();

    // Read everything back through a consumer group (kafkajs has no assign()).
    const consumer = kafka.consumer({ groupId: `g-${topic}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen = new Map();
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`consumed ${seen.size} of 500`)), 30000);
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          seen.set(message.key.toString(), [message.value.toString(), partition, message.offset, message.headers.i.toString()]);
          if (seen.size === 500) { clearTimeout(timer); resolve(); }
        },
      });
    });
    await consumer.disconnect();
    for (let i = 0; i < 500; i++) {
      assert.deepStrictEqual(seen.get(`k${i}`), [`v${i}`, i % 2, `${Math.floor(i / 2)}`, `${i}`]);
    }
  });
}
