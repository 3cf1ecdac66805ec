// JWT signing keys on a two-node cluster (PostgreSQL + Redis): the nodes, started together on an empty
// database, make one first key between them; tokens signed on either verify with one JWKS; a rotation on
// one node is published and signed with by the other.
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import type { Project, Stack } from '../../helpers/stack.js';
import { client, provider } from './setup.js';

let cluster: Cluster;
let nodeA: Stack;
let nodeB: Stack;
let p: Project;

beforeAll(async () => {
  cluster = await startCluster(2, { env: { POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' } });
  [nodeA, nodeB] = cluster.nodes as [Stack, Stack];
  p = await nodeA.createProject('jwt-cluster');
  await provider(nodeA, p, 'email', { methods: ['otp'] });
});
afterAll(async () => {
  await cluster?.stop();
});

const kidsOf = async (node: Stack) => ((await node.api('GET', '/.well-known/jwks.json', undefined)).body.keys as JWK[]).map((k) => k.kid);
const tokenOn = async (node: Stack, session: string) => {
  const r = await client(node, p.keys.test).post('/token', {}, { authorization: `Bearer ${session}` });
  expect(r.status).toBe(200);
  return r.body.token as string;
};

describe('signing keys on two nodes', () => {
  it('one first key for both nodes; tokens from either verify with one JWKS; a rotation on one is seen on the other', async () => {
    const [keysA, keysB] = await Promise.all([nodeA.admin('GET', '/admin/v1/auth/signing-keys'), nodeB.admin('GET', '/admin/v1/auth/signing-keys')]);
    expect(keysA.data).toHaveLength(1);
    expect(keysB.data.map((k: any) => k.kid)).toEqual(keysA.data.map((k: any) => k.kid));
    expect(await kidsOf(nodeB)).toEqual(await kidsOf(nodeA));

    const api = client(nodeA, p.keys.test);
    await api.post('/sign-in/email-otp/send', { email: 'two@example.com' });
    const code = (await api.get('/test/code?email=two@example.com')).body.code;
    const session = (await api.post('/sign-in/email-otp/verify', { email: 'two@example.com', code })).body.token as string;

    // One JWKS (node A's) verifies what either node signs.
    const jwks = createRemoteJWKSet(new URL(`${nodeA.url}/.well-known/jwks.json`));
    // Each test node has its own base URL (an operator gives the nodes one public address): either issuer.
    const opts = { issuer: [nodeA, nodeB].map((n) => n.url.replace('127.0.0.1', 'localhost')), audience: `postgate:${p.slug}`, algorithms: ['ES256'] };
    const fromA = await tokenOn(nodeA, session);
    const fromB = await tokenOn(nodeB, session);
    for (const t of [fromA, fromB]) expect((await jwtVerify(t, jwks, opts)).payload.sid).toEqual(expect.any(String));
    expect(decodeProtectedHeader(fromB).kid).toBe(decodeProtectedHeader(fromA).kid);

    // Rotated at once on B: A publishes the new key and signs with it within moments.
    const rotated = await nodeB.admin('POST', '/admin/v1/auth/signing-keys/rotate', { now: true });
    await expect.poll(() => kidsOf(nodeA)).toContain(rotated.kid);
    await expect.poll(async () => decodeProtectedHeader(await tokenOn(nodeA, session)).kid).toBe(rotated.kid);
    expect(decodeProtectedHeader(await tokenOn(nodeB, session)).kid).toBe(rotated.kid);
    // Old and new tokens, from either node, verify with one set fetched from node A after the rotation (the first
    // set saw the old key set less than 30 s ago: jose waits that long before it fetches again for an unknown kid,
    // which is why a rotation without --now publishes the key 10 minutes before it signs).
    const after = createRemoteJWKSet(new URL(`${nodeA.url}/.well-known/jwks.json`));
    for (const t of [fromA, fromB, await tokenOn(nodeA, session), await tokenOn(nodeB, session)])
      expect((await jwtVerify(t, after, opts)).payload.sub).toEqual(expect.any(String));
  });
});
