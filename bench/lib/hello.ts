// The baseline: a bare Fastify process with one route and logging off.
// Prints "listening <port>" once ready. HELLO_BODY (JSON text): the object it answers instead of
// {"hello":"world"}, so a route can be compared with a bare one answering the same bytes.
// POST / takes a JSON body through a schema and answers 202 {"id"} (bench/post-route.ts); with
// HELLO_RAW=1 a bare node:http server answers that POST instead of Fastify.
import http from 'node:http';
import Fastify from 'fastify';

const body: unknown = process.env.HELLO_BODY ? JSON.parse(process.env.HELLO_BODY) : { hello: 'world' };
const schema = {
  body: {
    type: 'object',
    required: ['from', 'to', 'subject'],
    properties: {
      from: { type: 'string' },
      to: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      subject: { type: 'string' },
      text: { type: 'string' },
    },
  },
};

let server: http.Server;
if (process.env.HELLO_RAW === '1') {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const sent = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { subject: string };
      const out = JSON.stringify({ id: sent.subject });
      res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
} else {
  const app = Fastify({ logger: false });
  app.get('/', async () => body);
  app.post('/', { schema }, async (req, reply) => {
    reply.code(202);
    return { id: (req.body as { subject: string }).subject };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  server = app.server;
}
const address = server.address();
console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
