// gateway/haraka-log.ts: Haraka's log lines through our pino logger, so the gateway's stdout is one
// JSON format: Haraka's levels mapped, its JSON fields lifted, the listener's missing TLS files (the
// gateway does not listen with TLS) not reported as errors.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { routeConsole, routeHarakaLogs, type HarakaLogger } from '../../gateway/haraka-log.js';

function capture(): { log: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'trace' },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        cb();
      },
    }),
  );
  return { log, lines };
}

const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
afterEach(() => Object.assign(console, saved));

it('maps Haraka’s levels and lifts its JSON fields into ours', () => {
  const { log, lines } = capture();
  const haraka: HarakaLogger = { log_respond: () => false };
  routeHarakaLogs(haraka, log, { listenerTls: false });
  expect(haraka.log_respond(0, null, { level: 'NOTICE', data: JSON.stringify({ message: 'delivered', uuid: 'A1', level: 'NOTICE' }) })).toBe(true);
  haraka.log_respond(0, null, { level: 'CRIT', data: JSON.stringify({ message: 'queue broken' }) });
  haraka.log_respond(0, null, { level: 'PROTOCOL', data: 'S: 250 OK' });
  haraka.log_respond(0, null, { level: 'SOMETHING', data: 'plain' });
  expect(lines.map((l) => [l.level, l.msg, l.component])).toEqual([
    [30, 'delivered', 'haraka'],
    [60, 'queue broken', 'haraka'],
    [10, 'S: 250 OK', 'haraka'],
    [30, 'plain', 'haraka'],
  ]);
  expect(lines[0]).toMatchObject({ uuid: 'A1' });
});

it('the listener’s missing TLS files are debug unless the listener is meant to have TLS', () => {
  const line = { level: 'ERROR', data: JSON.stringify({ message: 'tls key /x/tls_key.pem could not be loaded' }) };
  for (const [listenerTls, level] of [
    [false, 20],
    [true, 50],
  ] as const) {
    const { log, lines } = capture();
    const haraka: HarakaLogger = { log_respond: () => false };
    routeHarakaLogs(haraka, log, { listenerTls });
    haraka.log_respond(0, null, line);
    expect(lines[0]!.level).toBe(level);
  }
});

it('console output of Haraka’s dependencies becomes JSON lines', () => {
  const { log, lines } = capture();
  routeConsole(log);
  console.log('hello %s', 'there');
  console.warn('careful');
  console.error(new Error('bad').message);
  expect(lines.map((l) => [l.level, l.msg, l.component])).toEqual([
    [30, 'hello there', 'console'],
    [40, 'careful', 'console'],
    [50, 'bad', 'console'],
  ]);
});
