// KafkaJS over SASL_PLAINTEXT with OAUTHBEARER and an unsigned (alg none) token, as KafkaJS's own
// OAUTHBEARER tests authenticate: produce one record, consume it in a group, commit, read the commit
// back; or report how the authentication failed. Prints one JSON line.
//
// usage: node kafkajs_oauthbearer.js BOOTSTRAP TOPIC GROUP SUB LIFETIME_S SCOPE   (NODE_PATH: kafkajs)
// A refused token is not retried (retries 0); a good one gets KafkaJS's retries with short waits (its
// admin client may ask for the coordinator before its first metadata is in).
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, groupId, sub, lifetime, scope] = process.argv.slice(2)

function part(value) {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

function unsignedToken() {
  const now = Math.floor(Date.now() / 1000)
  const claims = { iat: now, exp: now + Number(lifetime), scope: scope ? scope.split(' ') : [] }
  if (sub) claims.sub = sub
  return `${part({ alg: 'none' })}.${part(claims)}.`
}

async function roundTrip(kafka) {
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: [{ value: 'kafkajs unsecured hello' }] })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const value = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30000)
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const next = (BigInt(message.offset) + 1n).toString()
        await consumer.commitOffsets([{ topic, partition, offset: next }])
        clearTimeout(timer)
        resolve(message.value.toString())
      },
    })
  })
  await consumer.disconnect()
  const admin = kafka.admin()
  await admin.connect()
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] })
  await admin.disconnect()
  return { value, committed: Number(offsets.partitions[0].offset) }
}

async function main() {
  const kafka = new Kafka({
    clientId: 'kcoord-kafkajs',
    brokers: [bootstrap],
    sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: unsignedToken() }) },
    retry: Number(lifetime) > 0 ? { retries: 5, initialRetryTime: 100 } : { retries: 0 },
    logLevel: process.env.KJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
  })
  try {
    console.log(JSON.stringify(await roundTrip(kafka)))
  } catch (error) {
    console.log(JSON.stringify({ error: `${error.name}: ${error.message}` }))
  }
}

main().then(() => process.exit(0))
