// The idempotent hand-off to Haraka (gateway/enqueue.ts) on a real outbox (SQLite in a temp dir) with
// a recorded queue function: what is refused before anything is written, a retry or a concurrent
// Enqueue of the same key is a duplicate, a refused message is forgotten so a retry sends it, a crash's
// 'pending' row is resolved from the queue files, and what reaches the queue (raw, composed, signed,
// or streamed from a build file that is removed afterwards).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../core/log.js';
import { Enqueuer, type FindQueued, keyOf, type OutgoingMessage, type QueueFn, recoverPending } from '../../gateway/enqueue.js';
import type { MessageParts } from '../../gateway/mime.js';
import { Outbox } from '../../gateway/outbox/outbox.js';

const log = createLogger('enqueue-test', 'silent');
let dir: string;
let outbox: Outbox;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-enqueue-'));
  fs.mkdirSync(path.join(dir, 'build'));
  outbox = Outbox.open(path.join(dir, 'outbox.db'), { synchronous: 'NORMAL' });
});
afterEach(() => {
  outbox.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Queued = Parameters<QueueFn>[0];

function enqueuer(opts: { queue?: QueueFn; queued?: Set<string>; ready?: Promise<void> } = {}) {
  const sent: Array<Queued & { body: string }> = [];
  const queue =
    opts.queue ??
    (async (m: Queued) => {
      const body = m.stream ? Buffer.concat(await (m.stream as Readable).toArray()).toString() : Buffer.from(m.raw).toString();
      sent.push({ ...m, body });
      return 'queued';
    });
  const asked: string[][] = [];
  const findQueued: FindQueued = async (ids) => {
    asked.push([...ids]);
    return new Set([...ids].filter((id) => opts.queued?.has(id)));
  };
  const e = new Enqueuer(outbox, queue, findQueued, opts.ready ?? Promise.resolve(), log, { build: path.join(dir, 'build') });
  return { e, sent, asked };
}

const raw = (s = 'Subject: hi\r\n\r\nbody\r\n') => new TextEncoder().encode(s);
const msg = (over: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  emailId: 'em_1',
  projectId: 'p1',
  mailFrom: 'bounce@acme.test',
  rcptTo: ['r@inbox.test'],
  raw: raw(),
  bulk: false,
  senderDomain: 'acme.test',
  ...over,
});
const parts = (over: Partial<MessageParts> = {}): MessageParts =>
  ({
    createdAtMs: BigInt(Date.parse('2026-11-25T10:00:00Z')),
    serviceHeaders: {},
    from: 'Acme <hello@acme.test>',
    to: ['r@inbox.test'],
    cc: [],
    replyTo: [],
    subject: 'Your receipt',
    text: 'Hello there.',
    html: '',
    headers: {},
    ...over,
  }) as MessageParts;

describe('keyOf', () => {
  it('is the key when given, else the email id', () => {
    expect(keyOf({ emailId: 'em_1', key: 'em_1/2' })).toBe('em_1/2');
    expect(keyOf({ emailId: 'em_1', key: '' })).toBe('em_1');
    expect(keyOf({ emailId: 'em_1' })).toBe('em_1');
  });
});

describe('Enqueuer', () => {
  it.each([
    ['email_id is required', { emailId: '' }],
    ['rcpt_to is empty', { rcptTo: [] }],
    ['raw is empty and there is nothing to compose', { raw: new Uint8Array() }],
    ['raw is empty and there is nothing to compose', { raw: new Uint8Array(), compose: parts({ from: '' }) }],
  ])('refuses %s without writing or queueing anything', async (error, over) => {
    const { e, sent } = enqueuer();
    const out = await e.enqueue(msg(over));
    expect(out).toMatchObject({ duplicate: false, error });
    expect(sent).toEqual([]);
    expect(await outbox.pendingEnqueues()).toEqual([]);
    expect(await outbox.getEnqueueState(keyOf(msg(over)))).toBeUndefined();
  });

  it('queues the raw message once; a retry of the same key is a duplicate', async () => {
    const { e, sent } = enqueuer();
    expect(await e.enqueue(msg())).toEqual({ emailId: 'em_1', key: 'em_1', duplicate: false, error: '' });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ key: 'em_1', rcptTo: ['r@inbox.test'], body: 'Subject: hi\r\n\r\nbody\r\n' });
    expect(await outbox.getEnqueueState('em_1')).toBe('queued');
    expect(await e.enqueue(msg())).toEqual({ emailId: 'em_1', key: 'em_1', duplicate: true, error: '' });
    expect(sent).toHaveLength(1);
    // Another recipient's copy of the same email has its own key.
    expect(await e.enqueue(msg({ key: 'em_1/1' }))).toMatchObject({ key: 'em_1/1', duplicate: false });
    expect(sent).toHaveLength(2);
  });

  it('a concurrent Enqueue of the same key waits for the first and is a duplicate', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const queue = vi.fn(async () => {
      await gate;
      return 'queued';
    });
    const { e } = enqueuer({ queue });
    const first = e.enqueue(msg());
    const second = e.enqueue(msg());
    expect(e.busy).toBe(1);
    release();
    expect(await first).toMatchObject({ duplicate: false, error: '' });
    expect(await second).toMatchObject({ duplicate: true, error: '' });
    expect(queue).toHaveBeenCalledOnce();
    expect(e.busy).toBe(0);
  });

  it('a refused message is forgotten, so a concurrent caller gets the error and a retry sends it', async () => {
    let refuse = true;
    const queue = vi.fn(async () => {
      if (refuse) throw new Error('queue dir full');
      return 'queued';
    });
    const { e } = enqueuer({ queue });
    const [a, b] = await Promise.all([e.enqueue(msg()), e.enqueue(msg())]);
    expect(a).toEqual({ emailId: 'em_1', key: 'em_1', duplicate: false, error: 'queue dir full' });
    expect(b).toEqual(a); // not reported as a duplicate of a failure
    expect(await outbox.getEnqueueState('em_1')).toBeUndefined();
    refuse = false;
    expect(await e.enqueue(msg())).toMatchObject({ duplicate: false, error: '' });
    expect(queue).toHaveBeenCalledTimes(2);
  });

  it('a pending row left by a crash is a duplicate when the queue has the file', async () => {
    await outbox.beginEnqueue('em_1');
    const { e, sent, asked } = enqueuer({ queued: new Set(['em_1']) });
    expect(await e.enqueue(msg())).toMatchObject({ duplicate: true, error: '' });
    expect(asked).toEqual([['em_1']]);
    expect(sent).toEqual([]);
    expect(await outbox.getEnqueueState('em_1')).toBe('queued');
  });

  it('a pending row left by a crash is sent when the queue has no file', async () => {
    await outbox.beginEnqueue('em_1');
    const { e, sent } = enqueuer();
    expect(await e.enqueue(msg())).toMatchObject({ duplicate: false, error: '' });
    expect(sent).toHaveLength(1);
    expect(await outbox.getEnqueueState('em_1')).toBe('queued');
  });

  it('writes nothing before Haraka has loaded its queue', async () => {
    let ready!: () => void;
    const { e, sent } = enqueuer({ ready: new Promise<void>((r) => (ready = r)) });
    const p = e.enqueue(msg());
    await new Promise((r) => setTimeout(r, 20));
    expect(sent).toEqual([]);
    expect(await outbox.getEnqueueState('em_1')).toBeUndefined();
    ready();
    expect(await p).toMatchObject({ error: '' });
    expect(sent).toHaveLength(1);
  });

  it('composes the message when raw is empty', async () => {
    const { e, sent } = enqueuer();
    await e.enqueue(msg({ raw: new Uint8Array(), compose: parts() }));
    expect(sent[0]!.body).toMatch(/^Subject: Your receipt\r$/m);
    expect(sent[0]!.body).toContain('Hello there.');
  });

  it('signs with the DKIM key when one is given', async () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 });
    const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const { e, sent } = enqueuer();
    await e.enqueue(msg({ raw: new Uint8Array(), compose: parts(), dkim: { domain: 'acme.test', selector: 's1', privateKeyPem } }));
    await e.enqueue(msg({ emailId: 'em_2', raw: new Uint8Array(), compose: parts() }));
    expect(sent[0]!.body).toMatch(/^DKIM-Signature: .*d=acme\.test/);
    expect(sent[0]!.body).toMatch(/s=s1/);
    expect(sent[1]!.body).not.toContain('DKIM-Signature');
  });

  it('a message with attachments goes to the queue as a stream from a build file, removed afterwards', async () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 });
    const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const { e, sent } = enqueuer();
    const compose = parts({ attachments: [{ ref: 'r1', filename: 'a.txt', contentType: 'text/plain', contentId: '' }] as MessageParts['attachments'] });
    const out = await e.enqueue(
      msg({
        raw: new Uint8Array(),
        compose,
        attachmentData: { r1: new TextEncoder().encode('attached') },
        dkim: { domain: 'acme.test', selector: 's1', privateKeyPem },
      }),
    );
    expect(out).toMatchObject({ error: '' });
    expect(sent[0]!.stream).toBeDefined();
    // raw carries the signature only; the stream is the signature followed by the message.
    expect(Buffer.from(sent[0]!.raw).toString()).toMatch(/^DKIM-Signature:/);
    expect(sent[0]!.body.startsWith(Buffer.from(sent[0]!.raw).toString())).toBe(true);
    expect(sent[0]!.body).toContain('filename=a.txt');
    expect(sent[0]!.body).toContain(Buffer.from('attached').toString('base64'));
    expect(fs.readdirSync(path.join(dir, 'build'))).toEqual([]);
  });

  it('removes the build file when the queue refuses the message', async () => {
    const { e } = enqueuer({
      queue: async () => {
        throw new Error('no');
      },
    });
    const compose = parts({ attachments: [{ ref: 'r1', filename: 'a.txt', contentType: 'text/plain', contentId: '' }] as MessageParts['attachments'] });
    expect(await e.enqueue(msg({ raw: new Uint8Array(), compose, attachmentData: { r1: new Uint8Array([1]) } }))).toMatchObject({ error: 'no' });
    expect(fs.readdirSync(path.join(dir, 'build'))).toEqual([]);
  });
});

describe('recoverPending', () => {
  it('marks pending ids with a queue file queued and forgets the others', async () => {
    for (const id of ['a', 'b', 'c']) await outbox.beginEnqueue(id);
    await outbox.markEnqueued(['c']);
    const warn = vi.spyOn(log, 'warn');
    let asked: string[] = [];
    await recoverPending(
      outbox,
      async (ids) => {
        asked = [...ids].sort();
        return new Set(['a']);
      },
      log,
    );
    expect(asked).toEqual(['a', 'b']);
    expect(await outbox.getEnqueueState('a')).toBe('queued');
    expect(await outbox.getEnqueueState('b')).toBeUndefined();
    expect(await outbox.getEnqueueState('c')).toBe('queued');
    expect(warn).toHaveBeenCalledWith({ queued: 1, notQueued: 1 }, expect.any(String));
  });

  it('does nothing when no enqueue was interrupted', async () => {
    const find = vi.fn<FindQueued>();
    await recoverPending(outbox, find, log);
    expect(find).not.toHaveBeenCalled();
  });
});
