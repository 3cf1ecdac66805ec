// The gateway process end to end: the real gateway (Haraka + our plugins) started as
// control's supervisor starts it, driven over gRPC, delivering to a real SMTP sink
// found through a real DNS server, all on loopback with free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { grpcClient, unary } from '../../proto/grpc.js';
import {
  AckRequestSchema,
  CancelOrderSchema,
  DeliveryStateRequestSchema,
  EnqueueRequestSchema,
  EventsRequestSchema,
  GatewayService,
  MetricsRequestSchema,
  PacingStatsRequestSchema,
  QueueStatsRequestSchema,
  SendNowRequestSchema,
  SetControlsRequestSchema,
  SetClockRequestSchema,
  SetThrottlesRequestSchema,
  ThrottleSchema,
  type DeliveryEvent,
  type EnqueueResponse,
  type QueueStatsResponse,
} from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { Outbox } from '../../gateway/outbox/outbox.js';
import { enqueueKeyOf, queueFiles } from '../../gateway/queue-scan.js';
import { CONTRACT } from '../../proto/contract.js';
import { CALL_MAC, controlAuth } from '../../proto/rpc-auth.js';
import { RpcMac } from '../../core/rpc-mac.js';
import { eventTypeName } from '../../proto/events.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { replies, startMxSink, tempFailFirst, type MxSink } from '../helpers/mx-sink.js';
import { until } from '../helpers/until.js';

const repo = path.resolve(import.meta.dirname, '../..');
type Client = ReturnType<typeof grpcClient>;

interface Gateway {
  proc: ChildProcess;
  address: string;
  client: Client;
  log: string[];
}

/** Starts `node --import tsx gateway/main.ts` and waits for its "gateway ready" line. */
async function startGateway(env: NodeJS.ProcessEnv): Promise<Gateway> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'gateway/main.ts'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => log.push(l));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway not ready:\n${log.slice(-30).join('\n')}`)), 20_000);
    proc.once('exit', (code) => reject(new Error(`gateway exited (${code}):\n${log.slice(-30).join('\n')}`)));
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      log.push(line);
      try {
        const rec = JSON.parse(line) as { msg?: string; grpc?: string };
        if (rec.msg === 'gateway ready' && rec.grpc) {
          clearTimeout(timer);
          resolve(rec.grpc);
        }
      } catch {
        // not JSON: kept in the log for failure messages
      }
    });
  });
  // Calls as control makes them: signed with POSTGATE_SECRET, answers checked.
  const client = grpcClient(GatewayService, address, { interceptors: [controlAuth(new RpcMac(env.POSTGATE_SECRET!), address)] });
  return { proc, address, client, log };
}

async function stopGateway(gw: Gateway, signal: NodeJS.Signals): Promise<number | null> {
  gw.client.close();
  if (gw.proc.exitCode !== null) return gw.proc.exitCode;
  const exited = new Promise<number | null>((resolve) => gw.proc.once('exit', (code) => resolve(code)));
  gw.proc.kill(signal);
  return exited;
}

/** An event as control reads it: the type by its name. */
type Seen = Omit<DeliveryEvent, 'type'> & { type: string };

/** A live Events stream that keeps everything it receives. */
function follow(client: Client, afterSeq: bigint) {
  const events: Seen[] = [];
  let wake: () => void = () => {};
  const call = client.events!(create(EventsRequestSchema, { contract: CONTRACT, afterSeq })) as grpc.ClientReadableStream<DeliveryEvent>;
  call.on('data', (e: DeliveryEvent) => {
    events.push({ ...e, type: eventTypeName(e.type) ?? `unknown ${e.type}` });
    wake();
  });
  call.on('error', () => {}); // CANCELLED when we stop following
  return {
    events,
    /** Events of one email, in order. */
    of: (emailId: string) => events.filter((e) => e.emailId === emailId),
    async until(pred: (events: Seen[]) => boolean, timeoutMs = 15_000): Promise<Seen[]> {
      const deadline = Date.now() + timeoutMs;
      while (!pred(events)) {
        if (Date.now() > deadline) throw new Error(`events never matched; got:\n${events.map(show).join('\n')}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
      return events;
    },
    stop: () => call.cancel(),
  };
}

const show = (e: Seen) => `${e.seq} ${e.emailId} ${e.type} ${e.recipient} #${e.attempt} ${e.enhancedCode} ${e.response}`;
const types = (events: Seen[], rcpt?: string) => events.filter((e) => !rcpt || e.recipient === rcpt).map((e) => `${e.type}#${e.attempt}`);

function message(emailId: string, rcptTo: string[]) {
  const raw =
    `From: Sender <app@sender.test>\r\nTo: ${rcptTo.join(', ')}\r\nSubject: Test ${emailId}\r\n` +
    `Date: Sun, 22 Nov 2026 10:00:00 +0000\r\nMessage-ID: <${emailId}@sender.test>\r\nX-Email-Id: ${emailId}\r\nMIME-Version: 1.0\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\n\r\nHello ${emailId}, héllo.\r\n.leading dot line\r\n`;
  return { emailId, projectId: 'prj_test', mailFrom: 'bounces@sender.test', rcptTo, raw: Buffer.from(raw), bulk: false, senderDomain: 'sender.test' };
}

async function enqueue(client: Client, ...messages: ReturnType<typeof message>[]) {
  const res = await unary<EnqueueResponse>(client, 'enqueue', create(EnqueueRequestSchema, { contract: CONTRACT, messages }));
  return res.results;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const SERVICE = `/${GatewayService.typeName}`;

/** Every RPC of the internal API with a request it would act on: mail to send as a tenant, a sequence to ack, throttles to replace… */
const harmful = () => [
  {
    method: 'enqueue',
    path: `${SERVICE}/Enqueue`,
    req: create(EnqueueRequestSchema, { contract: CONTRACT, messages: [message('em_forged', ['victim@ok.test'])] }),
  },
  { method: 'events', path: `${SERVICE}/Events`, req: create(EventsRequestSchema, { contract: CONTRACT, afterSeq: 0n }) },
  { method: 'ack', path: `${SERVICE}/Ack`, req: create(AckRequestSchema, { seq: 1_000_000n }) },
  {
    method: 'setThrottles',
    path: `${SERVICE}/SetThrottles`,
    req: create(SetThrottlesRequestSchema, { throttles: [create(ThrottleSchema, { provider: 'forged', ratePerMinute: 1 })] }),
  },
  { method: 'queueStats', path: `${SERVICE}/QueueStats`, req: create(QueueStatsRequestSchema) },
  { method: 'pacingStats', path: `${SERVICE}/PacingStats`, req: create(PacingStatsRequestSchema, { projectId: 'prj_test' }) },
  { method: 'setClock', path: `${SERVICE}/SetClock`, req: create(SetClockRequestSchema, { offsetMs: 86_400_000n }) },
  // Contract 4: an operator's lever, and what the gateway tells of its queue.
  {
    method: 'setControls',
    path: `${SERVICE}/SetControls`,
    req: create(SetControlsRequestSchema, {
      cancels: [create(CancelOrderSchema, { projectId: 'prj_test', acceptedBeforeMs: BigInt(Date.now() + 86_400_000) })],
    }),
  },
  { method: 'sendNow', path: `${SERVICE}/SendNow`, req: create(SendNowRequestSchema) },
  { method: 'deliveryState', path: `${SERVICE}/DeliveryState`, req: create(DeliveryStateRequestSchema) },
  { method: 'metrics', path: `${SERVICE}/Metrics`, req: create(MetricsRequestSchema) },
];

/** How a call ends: its status code, or 'data' when the event stream gave an event (then it is cancelled). */
function outcome(client: Client, method: string, req: unknown, metadata = new grpc.Metadata()): Promise<grpc.status | 'data'> {
  if (method === 'events') {
    return new Promise((resolve) => {
      const stream = client.events!(req, metadata) as grpc.ClientReadableStream<DeliveryEvent>;
      stream.on('data', () => {
        resolve('data');
        stream.cancel();
      });
      stream.on('error', (err: grpc.ServiceError) => resolve(err.code));
      stream.on('end', () => resolve(grpc.status.OK));
    });
  }
  return unary(client, method, req, metadata, 5_000).then(
    () => grpc.status.OK,
    (err: grpc.ServiceError) => err.code,
  );
}

describe('gateway process', () => {
  let dns: DnsServer;
  let sink: MxSink;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let gw: Gateway;
  let feed: ReturnType<typeof follow>;

  beforeAll(async () => {
    dns = await startDnsServer([
      { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
      { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
      // No MX: the domain's own A record is its implicit MX (RFC 5321).
      { type: 'A', name: 'implicit.test', address: '127.0.0.1' },
    ]);
    sink = await startMxSink();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-gw-'));
    const configFile = path.join(dataDir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({ delivery: { retryDelays: [1], maxTempFailures: 100 } }));
    env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('POSTGATE_')));
    Object.assign(env, {
      POSTGATE_DATA_DIR: dataDir,
      POSTGATE_HOST: '127.0.0.1',
      POSTGATE_GATEWAY_PORT: '0',
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_CONFIG: configFile,
      POSTGATE_LOG_LEVEL: 'info',
      POSTGATE_SECRET: crypto.randomBytes(32).toString('hex'),
    });
    gw = await startGateway(env);
    feed = follow(gw.client, 0n);
  }, 30_000);

  afterAll(async () => {
    feed?.stop();
    if (gw) expect(await stopGateway(gw, 'SIGTERM')).toBe(0);
    await sink?.close();
    await dns?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('delivers a message: the sink gets it, events go sending → sent', async () => {
    const msg = message('em_ok', ['alice@ok.test']);
    expect(await enqueue(gw.client, msg)).toMatchObject([{ emailId: 'em_ok', duplicate: false, error: '' }]);

    const [got] = (await sink.waitFor(1)).filter((m) => m.emailId === 'em_ok');
    expect(got!.mailFrom).toBe('bounces@sender.test');
    expect(got!.rcptTo).toEqual(['alice@ok.test']);
    // Haraka adds one Received header on top; the message itself arrives byte for byte.
    expect(got!.raw.toString('utf8')).toMatch(/^Received: \(postgate\)/);
    expect(got!.raw.toString('utf8').endsWith(msg.raw.toString('utf8'))).toBe(true);

    const events = await feed.until(() => feed.of('em_ok').some((e) => e.type === 'sent'));
    const mine = events.filter((e) => e.emailId === 'em_ok');
    expect(types(mine)).toEqual(['sending#1', 'sent#1']);
    expect(mine[1]).toMatchObject({ recipient: 'alice@ok.test', mx: 'mx.ok.test' });
    expect(mine[1]!.response).not.toBe('');
    expect(mine[0]!.seq).toBeLessThan(mine[1]!.seq);
  }, 30_000);

  it('reuses the connection for the next message to the MX, but not for an envelope that needs SMTPUTF8', async () => {
    expect(await enqueue(gw.client, message('em_next', ['bob@ok.test']))).toMatchObject([{ duplicate: false, error: '' }]);
    await feed.until(() => feed.of('em_next').some((e) => e.type === 'sent'));
    // Haraka asks for SMTPUTF8 when the reverse path needs it.
    const utf8 = { ...message('em_utf8', ['carol@ok.test']), mailFrom: 'bounces-jörg@sender.test' };
    expect(await enqueue(gw.client, utf8)).toMatchObject([{ duplicate: false, error: '' }]);
    await feed.until(() => feed.of('em_utf8').some((e) => e.type === 'sent'));
    const of = (id: string) => sink.messages.find((m) => m.emailId === id)!;
    // em_ok's connection was kept for em_next; a kept session skipped EHLO, so SMTPUTF8 needs a new one.
    expect(of('em_next').connection).toBe(of('em_ok').connection);
    expect(of('em_utf8')).toMatchObject({ mailFrom: 'bounces-jörg@sender.test', smtputf8: true });
    expect(of('em_utf8').connection).not.toBe(of('em_next').connection);
  }, 30_000);

  it('reports refused recipients: 550 5.1.1 bounced, 550 5.7.1 rejected, NXDOMAIN bounced', async () => {
    sink.setBehaviour('nobody@ok.test', { rcpt: [replies.noSuchUser] });
    sink.setBehaviour('spamtrap@ok.test', { rcpt: [replies.policy] });
    await enqueue(gw.client, message('em_bounce', ['nobody@ok.test', 'spamtrap@ok.test']), message('em_nxdomain', ['someone@nowhere.test']));

    await feed.until(() => feed.of('em_bounce').filter((e) => e.type !== 'sending').length === 2 && feed.of('em_nxdomain').length === 2);
    const bounced = feed.of('em_bounce').find((e) => e.recipient === 'nobody@ok.test' && e.type !== 'sending');
    expect(bounced).toMatchObject({ type: 'bounced', enhancedCode: '5.1.1', mx: 'mx.ok.test', attempt: 1 });
    expect(bounced!.response).toMatch(/^550 5\.1\.1 .*User unknown/);
    const rejected = feed.of('em_bounce').find((e) => e.recipient === 'spamtrap@ok.test' && e.type !== 'sending');
    expect(rejected).toMatchObject({ type: 'rejected', enhancedCode: '5.7.1' });
    expect(rejected!.response).toMatch(/spam/);

    const nx = feed.of('em_nxdomain');
    expect(types(nx)).toEqual(['sending#1', 'bounced#1']);
    expect(nx[1]).toMatchObject({ recipient: 'someone@nowhere.test', enhancedCode: '5.1.2', mx: '' });
    expect(nx[1]!.response).toMatch(/NXDOMAIN/);
    expect(sink.messages.some((m) => m.emailId === 'em_bounce' || m.emailId === 'em_nxdomain')).toBe(false);
  }, 30_000);

  it('retries a 450 after the configured delay, then delivers', async () => {
    sink.setBehaviour('grey@ok.test', { rcpt: tempFailFirst(1) });
    await enqueue(gw.client, message('em_grey', ['grey@ok.test']));

    await feed.until(() => feed.of('em_grey').some((e) => e.type === 'sent'));
    const mine = feed.of('em_grey');
    expect(types(mine)).toEqual(['sending#1', 'deferred#1', 'sending#2', 'sent#2']);
    const deferred = mine[1]!;
    expect(deferred).toMatchObject({ recipient: 'grey@ok.test', enhancedCode: '4.2.0', mx: 'mx.ok.test' });
    expect(deferred.response).toMatch(/^450 4\.2\.0 Greylisted/);
    // retryDelays [1]: the next attempt is due a second after the deferral, and happens then.
    expect(Number(deferred.nextAttemptMs - deferred.atMs)).toBe(1000);
    expect(Number(mine[2]!.atMs)).toBeGreaterThanOrEqual(Number(deferred.nextAttemptMs) - 50);
    expect(sink.messages.filter((m) => m.emailId === 'em_grey')).toHaveLength(1);
  }, 30_000);

  it('enqueues an id once: a repeated Enqueue is answered duplicate and not re-sent', async () => {
    const msg = message('em_dup', ['dup@implicit.test']);
    // The same id twice in one request, and again after it was queued.
    const first = await enqueue(gw.client, msg, msg);
    expect(first.map((r) => r.duplicate).sort()).toEqual([false, true]);
    expect(await enqueue(gw.client, msg)).toMatchObject([{ emailId: 'em_dup', duplicate: true, error: '' }]);

    await feed.until(() => feed.of('em_dup').some((e) => e.type === 'sent'));
    expect(feed.of('em_dup').find((e) => e.type === 'sent')!.mx).toBe('implicit.test');
    expect(await enqueue(gw.client, msg)).toMatchObject([{ duplicate: true }]);
    await sleep(1500); // room for a wrongful second delivery to show up
    expect(sink.messages.filter((m) => m.emailId === 'em_dup')).toHaveLength(1);
    expect(types(feed.of('em_dup'))).toEqual(['sending#1', 'sent#1']);
  }, 30_000);

  it('refuses a control of another contract version, loudly and before reading anything', async () => {
    const other = CONTRACT + 1;
    const refusal = (req: { contract?: number }) =>
      unary<EnqueueResponse>(gw.client, 'enqueue', create(EnqueueRequestSchema, { ...req, messages: [message('em_other', ['carol@ok.test'])] })).then(
        () => undefined,
        (err: grpc.ServiceError) => err,
      );
    const refused = await refusal({ contract: other });
    expect(refused?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(refused?.details).toContain(`control speaks contract ${other}, this gateway ${CONTRACT}`);
    // A control from before versioning sends no contract at all.
    expect((await refusal({}))?.code).toBe(grpc.status.FAILED_PRECONDITION);

    const stream = gw.client.events!(create(EventsRequestSchema, { contract: other, afterSeq: 0n })) as grpc.ClientReadableStream<DeliveryEvent>;
    let streamed = 0;
    stream.on('data', () => streamed++);
    const streamErr = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    expect(streamErr.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(streamed).toBe(0);

    // Nothing of the refused call was kept: the same message in the right contract is sent, not a duplicate.
    const ok = await unary<EnqueueResponse>(
      gw.client,
      'enqueue',
      create(EnqueueRequestSchema, { contract: CONTRACT, messages: [message('em_other', ['carol@ok.test'])] }),
    );
    // The answer states the gateway's version too, so a control can tell a gateway from before the check.
    expect(ok.contract).toBe(CONTRACT);
    expect(ok.results).toMatchObject([{ emailId: 'em_other', duplicate: false, error: '' }]);
    await feed.until(() => feed.of('em_other').some((e) => e.type === 'sent'));
  }, 30_000);

  describe('authentication: only a caller holding POSTGATE_SECRET is served, on loopback too', () => {
    const refusedLines = () => gw.log.filter((l) => l.includes('internal gRPC call refused'));
    /** Each refused call leaves exactly one log line, with its reason and without the secret or a MAC. */
    async function expectOneLineEach(before: number, calls: number) {
      await until(() => refusedLines().length >= before + calls, 5_000, 'refusal lines');
      await sleep(200);
      const lines = refusedLines().slice(before);
      expect(lines).toHaveLength(calls);
      for (const l of lines) {
        expect(JSON.parse(l)).toMatchObject({ call: expect.stringMatching(/^\/postgate\.gateway\.v1\.GatewayService\//), reason: expect.any(String) });
        expect(l).not.toContain(env.POSTGATE_SECRET!);
      }
      return lines;
    }

    it('refuses a plain client (no credential) on every RPC with UNAUTHENTICATED, before anything is done', async () => {
      const plain = grpcClient(GatewayService, gw.address);
      const before = refusedLines().length;
      const statsBefore = await unary<QueueStatsResponse>(gw.client, 'queueStats', create(QueueStatsRequestSchema));
      for (const c of harmful()) expect([c.method, await outcome(plain, c.method, c.req)]).toEqual([c.method, grpc.status.UNAUTHENTICATED]);
      plain.close();
      const lines = await expectOneLineEach(before, harmful().length);
      expect(lines.map((l) => JSON.parse(l).reason as string).every((r) => r.includes('no MAC'))).toBe(true);
      // Nothing was acked away, and the forged message was never queued: sent now by control, it is no duplicate.
      const statsAfter = await unary<QueueStatsResponse>(gw.client, 'queueStats', create(QueueStatsRequestSchema));
      expect(statsBefore.outboxPending).toBeGreaterThan(0n);
      expect(statsAfter.outboxPending).toBeGreaterThanOrEqual(statsBefore.outboxPending);
      expect(sink.messages.some((m) => m.emailId === 'em_forged')).toBe(false);
      expect(await enqueue(gw.client, message('em_forged', ['victim@ok.test']))).toMatchObject([{ duplicate: false, error: '' }]);
      await feed.until(() => feed.of('em_forged').some((e) => e.type === 'sent'));
    }, 30_000);

    it('refuses a MAC under another key, and one whose time is more than 60 s off either way', async () => {
      const plain = grpcClient(GatewayService, gw.address);
      const before = refusedLines().length;
      const macs = [
        new RpcMac('another secret'),
        new RpcMac(env.POSTGATE_SECRET!, { now: () => Date.now() - 61_000 }),
        new RpcMac(env.POSTGATE_SECRET!, { now: () => Date.now() + 61_000 }),
      ];
      for (const mac of macs) {
        for (const c of harmful()) {
          // Headers made as control makes them, sent by a plain client: what is measured is the gateway's answer.
          const md = new grpc.Metadata();
          md.set(CALL_MAC, mac.sign(c.path).value);
          expect([c.method, await outcome(plain, c.method, c.req, md)]).toEqual([c.method, grpc.status.UNAUTHENTICATED]);
        }
      }
      plain.close();
      const reasons = (await expectOneLineEach(before, macs.length * harmful().length)).map((l) => JSON.parse(l).reason as string);
      expect(reasons.slice(0, harmful().length).every((r) => r.includes('does not match'))).toBe(true);
      expect(reasons.slice(harmful().length).every((r) => /time is -?6\d s from/.test(r))).toBe(true);
    }, 30_000);

    it('tells a control with another key why it is refused', async () => {
      const wrongKey = grpcClient(GatewayService, gw.address, { interceptors: [controlAuth(new RpcMac('another secret'), gw.address)] });
      const err = await unary(wrongKey, 'queueStats', create(QueueStatsRequestSchema)).catch((e: grpc.ServiceError) => e);
      wrongKey.close();
      // The gateway refused first: control's own key was wrong.
      expect(err).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringContaining('gateway refuses the call') });
      expect(await outcome(gw.client, 'queueStats', create(QueueStatsRequestSchema))).toBe(grpc.status.OK);
    }, 30_000);

    it('refuses a replayed header set, and a MAC made for another RPC', async () => {
      const plain = grpcClient(GatewayService, gw.address);
      const mac = new RpcMac(env.POSTGATE_SECRET!);
      // Requests that change nothing, so the first (accepted) call of each is harmless.
      const requests: Record<string, unknown> = {
        enqueue: create(EnqueueRequestSchema, { contract: CONTRACT }),
        events: create(EventsRequestSchema, { contract: CONTRACT, afterSeq: 0n }),
        ack: create(AckRequestSchema, { seq: 0n }),
        setThrottles: create(SetThrottlesRequestSchema),
        queueStats: create(QueueStatsRequestSchema),
        pacingStats: create(PacingStatsRequestSchema, { projectId: 'prj_test' }),
        setClock: create(SetClockRequestSchema),
        // Malformed, so the handler refuses it: a served push would make the gateway wait for control's after the kill -9 below.
        setControls: create(SetControlsRequestSchema, { cancels: [create(CancelOrderSchema)] }),
        sendNow: create(SendNowRequestSchema),
        deliveryState: create(DeliveryStateRequestSchema),
        metrics: create(MetricsRequestSchema),
      };
      const before = refusedLines().length;
      for (const c of harmful()) {
        const md = new grpc.Metadata();
        md.set(CALL_MAC, mac.sign(c.path).value);
        // Served once (its own answer: data, OK, or the handler's refusal of an empty request)...
        expect([c.method, await outcome(plain, c.method, requests[c.method], md)]).not.toEqual([c.method, grpc.status.UNAUTHENTICATED]);
        // ...and never again with the same headers.
        expect([c.method, await outcome(plain, c.method, requests[c.method], md)]).toEqual([c.method, grpc.status.UNAUTHENTICATED]);
      }
      // A MAC is bound to its method: QueueStats' fresh one does not open Enqueue.
      const md = new grpc.Metadata();
      md.set(CALL_MAC, mac.sign(`${SERVICE}/QueueStats`).value);
      expect(await outcome(plain, 'enqueue', harmful()[0]!.req, md)).toBe(grpc.status.UNAUTHENTICATED);
      plain.close();
      const reasons = (await expectOneLineEach(before, harmful().length + 1)).map((l) => JSON.parse(l).reason as string);
      expect(reasons.slice(0, -1).every((r) => r.includes('replays'))).toBe(true);
      expect(reasons.at(-1)).toContain('does not match');
    }, 30_000);
  });

  it('resumes Events from a cursor, and Ack prunes what control has recorded', async () => {
    const before = [...feed.events];
    const cursor = before[Math.floor(before.length / 2)]!.seq;

    // A reconnecting consumer gets exactly the events after its cursor, then live ones.
    const resumed = follow(gw.client, cursor);
    await resumed.until((ev) => ev.length >= before.filter((e) => e.seq > cursor).length);
    expect(resumed.events.map((e) => e.seq)).toEqual(before.filter((e) => e.seq > cursor).map((e) => e.seq));
    await enqueue(gw.client, message('em_live', ['bob@ok.test']));
    await resumed.until(() => resumed.of('em_live').some((e) => e.type === 'sent'));
    resumed.stop();
    const seqs = resumed.events.map((e) => Number(e.seq));
    expect(seqs.every((s, i) => s > Number(cursor) && (i === 0 || s > seqs[i - 1]!))).toBe(true);

    await unary(gw.client, 'ack', create(AckRequestSchema, { seq: cursor }));
    const stats = await unary<QueueStatsResponse>(gw.client, 'queueStats', create(QueueStatsRequestSchema));
    expect(stats.lastSeq).toBe(feed.events.at(-1)!.seq);
    expect(Number(stats.outboxPending)).toBe(feed.events.filter((e) => e.seq > cursor).length);
    const fromZero = follow(gw.client, 0n);
    await fromZero.until((ev) => ev.length > 0);
    fromZero.stop();
    expect(fromZero.events[0]!.seq).toBeGreaterThan(cursor);
  }, 30_000);

  it('a stream from behind what was pruned waits for new events, and the gateway keeps answering', async () => {
    // Every event acked (another control may have recorded them): nothing is left after any old cursor.
    const last = feed.events.at(-1)!.seq;
    await unary(gw.client, 'ack', create(AckRequestSchema, { seq: last }));
    // Such a stream once spun in microtasks (nothing after its cursor, the feed further on) and hung the gateway.
    const behind = follow(gw.client, 0n);
    await sleep(300);
    const stats = await unary<QueueStatsResponse>(gw.client, 'queueStats', create(QueueStatsRequestSchema), undefined, 5_000);
    expect(Number(stats.outboxPending)).toBe(0);
    await enqueue(gw.client, message('em_after_prune', ['dave@ok.test']));
    await behind.until(() => behind.of('em_after_prune').some((e) => e.type === 'sent'));
    behind.stop();
    expect(behind.events.every((e) => e.seq > last)).toBe(true);
  }, 30_000);

  it('survives kill -9: queued mail is delivered after restart, interrupted enqueues settle', async () => {
    // Mail in mid-session (DATA answer held back) and mail waiting for a retry.
    sink.setBehaviour('slow@ok.test', { dataDelayMs: 2500 });
    sink.setBehaviour('stuck@ok.test', { rcpt: Array(1000).fill(replies.greylisted) });
    sink.setBehaviour('done@ok.test', { rcpt: Array(1000).fill(replies.greylisted) });
    const slow = ['em_c1', 'em_c2', 'em_c3'].map((id) => message(id, ['slow@ok.test']));
    const stuck = message('em_x1', ['stuck@ok.test']);
    const done = message('em_f1', ['done@ok.test']);
    for (const r of await enqueue(gw.client, ...slow, stuck, done)) expect(r).toMatchObject({ duplicate: false, error: '' });
    await feed.until(() => ['em_x1', 'em_f1'].every((id) => feed.of(id).some((e) => e.type === 'deferred')) && sink.attempts('slow@ok.test') >= 3);
    feed.stop();
    expect(await stopGateway(gw, 'SIGKILL')).toBe(null);

    // While it is down, fake the two crash windows of Enqueue in its outbox:
    // em_x1 as if the gateway died after Haraka queued it but before recording so,
    // em_y1 as if it died before Haraka wrote anything.
    const outbox = Outbox.open(path.join(dataDir, 'gateway', 'outbox.db'));
    await outbox.forgetEnqueued(['em_x1']);
    expect(await outbox.beginEnqueue('em_x1')).toBeUndefined();
    expect(await outbox.beginEnqueue('em_y1')).toBeUndefined();
    expect(await outbox.getEnqueueState('em_c1')).toBe('queued');
    // And the window of delivery: em_f1's outcome recorded, the crash before Haraka removed its file.
    const queueDir = path.join(dataDir, 'gateway', 'queue');
    const files = await queueFiles(queueDir);
    const keys = await Promise.all(files.map((f) => enqueueKeyOf(path.join(queueDir, f))));
    const doneFile = files[keys.indexOf('em_f1')]!;
    expect(doneFile).toBeDefined();
    await outbox.appendEvents([], [doneFile]);
    outbox.close();

    sink.setBehaviour('slow@ok.test', {});
    sink.setBehaviour('stuck@ok.test', {});
    sink.setBehaviour('done@ok.test', {});
    const doneAttempts = sink.attempts('done@ok.test');
    const sentBefore = new Set(feed.events.filter((e) => e.type === 'sent').map((e) => e.emailId));
    gw = await startGateway(env);
    feed = follow(gw.client, 0n);
    // Settled from Haraka's queue files at start, before Haraka loaded them.
    const recovery = gw.log.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === 'resolved enqueues interrupted by a crash');
    expect(recovery).toMatchObject({ queued: 1, notQueued: 1 });
    const removed = gw.log.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === 'removed queue files already delivered before a crash');
    expect(removed).toMatchObject({ removed: 1 });
    expect(fs.existsSync(path.join(queueDir, doneFile))).toBe(false);

    const again = await enqueue(gw.client, ...slow, stuck, message('em_y1', ['fresh@ok.test']));
    expect(again.map((r) => [r.emailId, r.duplicate, r.error])).toEqual([
      ['em_c1', true, ''],
      ['em_c2', true, ''],
      ['em_c3', true, ''],
      ['em_x1', true, ''], // found in Haraka's queue at start: not sent again
      ['em_y1', false, ''], // never reached Haraka: sent now
    ]);

    const ids = ['em_c1', 'em_c2', 'em_c3', 'em_x1', 'em_y1'];
    await feed.until(() => ids.every((id) => feed.of(id).some((e) => e.type === 'sent')));
    for (const id of ['em_c1', 'em_c2', 'em_c3']) expect(sentBefore.has(id)).toBe(false);
    for (const id of ids) expect(sink.messages.some((m) => m.emailId === id)).toBe(true);
    await sleep(1500);
    expect(sink.messages.filter((m) => m.emailId === 'em_x1')).toHaveLength(1);
    expect(sink.messages.filter((m) => m.emailId === 'em_y1')).toHaveLength(1);
    // Its delivery was recorded: the file the crash left is not sent again.
    expect(sink.messages.filter((m) => m.emailId === 'em_f1')).toHaveLength(0);
    expect(sink.attempts('done@ok.test')).toBe(doneAttempts);
    // Events written before the crash were kept and streamed again from the outbox.
    expect(feed.of('em_x1').filter((e) => e.type === 'deferred').length).toBeGreaterThan(0);
  }, 60_000);

  it('stops on SIGTERM after the SMTP session under way has finished', async () => {
    sink.setBehaviour('drain@ok.test', { dataDelayMs: 1500 });
    await enqueue(gw.client, message('em_drain', ['drain@ok.test']));
    await feed.until(() => sink.attempts('drain@ok.test') >= 1);
    feed.stop();
    expect(await stopGateway(gw, 'SIGTERM')).toBe(0);
    expect(sink.messages.filter((m) => m.emailId === 'em_drain')).toHaveLength(1);

    // Its outcome was recorded before the exit, so the next start does not send it again.
    gw = await startGateway(env);
    feed = follow(gw.client, 0n);
    await feed.until(() => feed.of('em_drain').some((e) => e.type === 'sent'));
    await sleep(1000);
    expect(types(feed.of('em_drain'))).toEqual(['sending#1', 'sent#1']);
  }, 30_000);
});
