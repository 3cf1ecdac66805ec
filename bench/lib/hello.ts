// The baseline: a bare Fastify process with one route and logging off.
// Prints "listening <port>" once ready. HELLO_BODY (JSON text): the object it answers instead of
// {"hello":"world"}, so a route can be compared with a bare one answering the same bytes.
import Fastify from 'fastify';

const body: unknown = process.env.HELLO_BODY ? JSON.parse(process.env.HELLO_BODY) : { hello: 'world' };
const app = Fastify({ logger: false });
app.get('/', async () => body);
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
