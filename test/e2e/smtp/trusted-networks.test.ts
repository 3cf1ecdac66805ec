// Trusted-network submission (config `smtpTrusted`, as Postfix's mynetworks): off by default,
// MAIL without AUTH is 530; when set, a session from one of its networks (loopback unless
// named) sends as the project of the configured key without AUTH, through the same pipeline;
// a session from elsewhere still has to authenticate. A network that is no CIDR stops start-up.
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';

let stack: Stack;
let dns: DnsServer;
let sink: MxSink;
let acme: Project;

const base = { smtpRate: 1000 };

/** Restarts the stack with `smtpTrusted` set as given (undefined: off). */
async function restart(smtpTrusted: unknown): Promise<void> {
  await stack.stop();
  fs.writeFileSync(stack.env.POSTGATE_CONFIG!, JSON.stringify(smtpTrusted === undefined ? base : { ...base, smtpTrusted }));
  await stack.boot();
}

/** One session, no AUTH: each command is sent after the final line of the previous reply. */
function session(commands: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(stack.env.POSTGATE_SMTP_PORT), '127.0.0.1');
    const lines: string[] = [];
    let buf = '';
    const queue = [...commands];
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        lines.push(line);
        if (/^\d{3} /.test(line)) {
          const next = queue.shift();
          if (next !== undefined) sock.write(`${next}\r\n`);
        }
      }
    });
    sock.on('close', () => resolve(lines));
    sock.on('error', reject);
    sock.setTimeout(5000, () => sock.destroy(new Error('timeout')));
  });
}

const message = ['From: Acme <hello@acme.test>', 'To: bob@ok.test', 'Subject: Trusted', '', 'Sent without AUTH.', '.'].join('\r\n');
const send = () => session(['EHLO app.local', 'MAIL FROM:<hello@acme.test>', 'RCPT TO:<bob@ok.test>', 'DATA', message, 'QUIT']);

beforeAll(async () => {
  dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  sink = await startMxSink();
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) }, config: base });
  acme = await stack.createProject('acme');
  await stack.verifyDomain('acme', 'acme.test');
});
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('trusted networks', () => {
  it('are off by default: MAIL without AUTH is 530', async () => {
    const lines = await send();
    expect(lines.find((l) => l.startsWith('530'))).toBeDefined();
    expect(lines.some((l) => l.includes('queued as'))).toBe(false);
  });

  it('when set, take mail from loopback without AUTH as the configured key, through the pipeline', async () => {
    await restart({ key: acme.keys.live });
    const lines = await send();
    const id = /queued as ([0-9a-f-]{36})$/.exec(lines.find((l) => l.startsWith('250 2.0.0')) ?? '')?.[1];
    expect(id, lines.join('\n')).toBeDefined();
    // The email belongs to the key's project, and goes out as any other.
    const email = await stack.waitEmail(acme.keys.live, id!, (e) => e.status === 'sent' || e.status === 'delivered');
    expect(email.subject).toBe('Trusted');
    // Refusals are the pipeline's: an unverified sender domain is 550 5.7.1.
    const refused = await session([
      'EHLO app.local',
      'MAIL FROM:<hello@other.test>',
      'RCPT TO:<bob@ok.test>',
      'DATA',
      message.replace('hello@acme.test', 'hello@other.test'),
      'QUIT',
    ]);
    expect(refused.find((l) => l.startsWith('550'))).toMatch(/^550 5\.7\.1/);
  });

  it('hold a client outside the named networks to AUTH', async () => {
    await restart({ key: acme.keys.live, networks: ['10.0.0.0/8', 'fd00::/8'] });
    const lines = await send();
    expect(lines.find((l) => l.startsWith('530'))).toBeDefined();
    expect(lines.some((l) => l.includes('queued as'))).toBe(false);
  });

  it('refuse the session when the key is not a valid live key', async () => {
    await restart({ key: 'pg_live_not-a-key' });
    const lines = await send();
    expect(lines.find((l) => l.startsWith('535'))).toMatch(/^535 5\.7\.8/);
  });

  it('stop start-up when a network is not a CIDR', async () => {
    await expect(restart({ key: acme.keys.live, networks: ['127.0.0.1/33'] })).rejects.toThrow(/smtpTrusted\.networks/);
    await restart(undefined);
  });
});
