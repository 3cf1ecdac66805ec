// What a logger writes to stdout while a function runs, for the log modules' unit tests.
import { vi } from 'vitest';

/** What `fn` writes to stdout, one parsed JSON object per line. */
export function captured(fn: () => void): Array<Record<string, unknown>> {
  const lines: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write);
  fn();
  vi.restoreAllMocks();
  return lines
    .join('')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
