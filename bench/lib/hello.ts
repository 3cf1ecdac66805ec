// The baseline: a bare Fastify process with one route and logging off.
// Prints "listening <port>" once ready. HELLO_BODY (JSON text): the object it answers instead of
// {"hello":"world"}, so a route can be compared with a bare one answering the same bytes.
// POST / takes a JSON body through a schema and answers 202 {"id"} (bench/post-route.ts); with
// HELLO_RAW=1 a bare node:http server answers that POST instead of Fastify. HELLO_STORE=<data dir>:
// Fastify's POST first records the email through postgate's own SQLite store (control/store) and
// answers once it is on disk, as `POST /v1/emails` does, with none of the route's other work: what
// the store costs a request.
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
  const record = process.env.HELLO_STORE ? await storeRecorder(process.env.HELLO_STORE) : undefined;
  app.post('/', { schema }, async (req, reply) => {
    const sent = req.body as { from: string; to: string | string[]; subject: string };
    const id = record ? await record(sent, JSON.stringify(sent)) : sent.subject;
    reply.code(202);
    return { id };
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

/** Records a sent email as the send pipeline hands it to the store (one recipient list, suppressions judged in the insert). */
async function storeRecorder(dataDir: string) {
  const { openStore } = await import('../../control/store/open.js');
  const { localInvalidator } = await import('../../core/invalidation.js');
  const { uuidv7 } = await import('../../core/ids.js');
  // Checkpointed by the process that started this one, as the supervisor does for control.
  const storage = { synchronous: 'FULL' as const, maxBatch: 1000, externalCheckpoints: true };
  const store = await openStore({ dataDir, storage }, localInvalidator());
  const projectId = uuidv7();
  await store.projects.create({ id: projectId, slug: 'bench', name: 'Bench', plan: 'scale', createdAt: Date.now() }, []);
  return async (sent: { from: string; to: string | string[]; subject: string }, request: string): Promise<string> => {
    const id = uuidv7();
    const to = Array.isArray(sent.to) ? sent.to : [sent.to];
    await store.emails.accept(
      {
        id,
        projectId,
        status: 'queued',
        from: sent.from,
        subject: sent.subject,
        bulk: false,
        request,
        createdAt: Date.now(),
        recipients: to.map((address) => ({ address, kind: 'to' as const })),
      },
      { suppressions: true },
    );
    return id;
  };
}
