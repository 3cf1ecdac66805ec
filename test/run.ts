// `npm test`: runs every vitest file and ends with the plain line CI reads:
// `N passed, N failed`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Browser tests drive Debian's chromium; a fresh machine gets it here (never a downloaded browser).
function ensureChromium(): void {
  if (!fs.existsSync('test/e2e/browser') || fs.existsSync('/usr/bin/chromium')) return;
  if (process.getuid?.() !== 0) {
    console.warn('chromium is missing and this is not root: install it with `apt-get install -y chromium`');
    return;
  }
  console.log('installing chromium for the browser tests (apt-get)…');
  spawnSync('apt-get', ['update'], { stdio: 'inherit' });
  spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
ensureChromium();

function firstLine(message: string): string {
  return (message.split('\n').find((l) => l.trim()) ?? '').trim().slice(0, 300);
}

const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-vitest-')), 'report.json');
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)];
const run = spawnSync('npx', args, { stdio: 'inherit' });

let passed = 0;
let failed = 0;
try {
  const r = JSON.parse(fs.readFileSync(report, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    testResults: Array<{
      name: string;
      status: string;
      startTime?: number;
      endTime?: number;
      message?: string;
      assertionResults: Array<{ fullName: string; status: string; failureMessages?: string[] }>;
    }>;
  };
  passed = r.numPassedTests;
  failed = r.numFailedTests;
  // The slowest files, so the suite's time (CI's budget) is seen where it goes.
  const slow = r.testResults
    .map((f) => ({ file: path.relative(process.cwd(), f.name), s: ((f.endTime ?? 0) - (f.startTime ?? 0)) / 1000 }))
    .sort((a, b) => b.s - a.s)
    .slice(0, 12);
  console.log(`slowest files: ${slow.map((f) => `${f.file} ${f.s.toFixed(1)} s`).join(', ')}`);
  // A file that fails to load has no tests to count; count it as a failure.
  failed += r.testResults.filter((f) => f.status === 'failed' && f.message).length;
  // The failures again, a line each, just above the count: a CI log that keeps only its tail still
  // names what failed and why.
  for (const f of r.testResults) {
    const file = path.relative(process.cwd(), f.name);
    if (f.status === 'failed' && f.message) console.log(`FAILED ${file}: ${firstLine(f.message)}`);
    for (const t of f.assertionResults) {
      if (t.status === 'failed') console.log(`FAILED ${file} > ${t.fullName}: ${firstLine(t.failureMessages?.[0] ?? '')}`);
    }
  }
} catch {
  failed = Math.max(failed, 1);
}
if (run.status !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
