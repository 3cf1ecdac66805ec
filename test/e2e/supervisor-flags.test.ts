// The supervisor starts each child with its V8 flags (control/supervisor.ts: the shared ones, then
// the child's own, then the operator's POSTGATE_NODE_ARGS, so that the operator's win).
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await Stack.start({ env: { POSTGATE_NODE_ARGS: '--stack-size=900 --max-semi-space-size=8' } });
});
afterAll(async () => {
  await stack?.stop();
});

const argvOf = (child: 'control' | 'gateway') =>
  fs
    .readFileSync(`/proc/${stack.pid(child)}/cmdline`, 'utf8')
    .split('\0')
    .filter(Boolean);
/** The value V8 takes for `flag`: the last one given. */
const lastValue = (argv: string[], flag: string) =>
  argv
    .filter((a) => a.startsWith(`${flag}=`))
    .at(-1)
    ?.slice(flag.length + 1);

it('runs the gateway with a smaller heap growth step than control, and the operator flags last', () => {
  const control = argvOf('control');
  const gateway = argvOf('gateway');
  expect(lastValue(control, '--heap-growing-percent')).toBe('100');
  expect(lastValue(gateway, '--heap-growing-percent')).toBe('50');
  for (const argv of [control, gateway]) {
    expect(lastValue(argv, '--max-semi-space-size')).toBe('8');
    expect(lastValue(argv, '--stack-size')).toBe('900');
    // Flags come before the entry script, or Node would pass them to the script as arguments.
    const entry = argv.findIndex((a) => /(control|gateway)[/\\]main\.(js|ts)$/.test(a));
    expect(entry).toBeGreaterThan(argv.indexOf('--stack-size=900'));
  }
});
