// Starts the whole stack the way `npm start` does (the supervisor with control
// and gateway), on free ports and a temporary data dir.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';
import { dist } from '../../deploy/build.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const exec = promisify(execFile);
const supervisor = path.join(dist, 'control/supervisor.js');

export interface StackOptions {
  env?: Record<string, string>;
  /** Written to a file and passed as POSTGATE_CONFIG. */
  config?: Record<string, unknown>;
  dataDir?: string;
}

export interface Project {
  id: string;
  slug: string;
  keys: { live: string; test: string };
}

export class Stack {
  proc: ChildProcess | undefined;
  readonly logFile: string;

  constructor(
    readonly url: string,
    readonly dataDir: string,
    readonly env: Record<string, string>,
  ) {
    this.logFile = path.join(dataDir, 'stack.log');
  }

  static async start(opts: StackOptions = {}): Promise<Stack> {
    const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-test-'));
    const [http, smtp, grpc, gateway, inbound, admin] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
    const env: Record<string, string> = {
      POSTGATE_DATA_DIR: dataDir,
      POSTGATE_HOST: '127.0.0.1',
      POSTGATE_HTTP_PORT: String(http),
      POSTGATE_ADMIN_PORT: String(admin),
      POSTGATE_SMTP_PORT: String(smtp),
      POSTGATE_GRPC_PORT: String(grpc),
      POSTGATE_GATEWAY_PORT: String(gateway),
      POSTGATE_INBOUND_PORT: String(inbound),
      POSTGATE_LOG_LEVEL: 'info',
      ...opts.env,
    };
    if (opts.config) {
      const file = path.join(dataDir, 'config.json');
      fs.writeFileSync(file, JSON.stringify(opts.config));
      env.POSTGATE_CONFIG = file;
    }
    const stack = new Stack(`http://127.0.0.1:${http}`, dataDir, env);
    // One that never became ready is stopped here: no caller holds it to stop it later.
    await stack.boot().catch(async (err) => {
      await stack.stop();
      throw err;
    });
    return stack;
  }

  /** Starts (or restarts after stop()) the supervisor and waits until the API answers. */
  async boot(): Promise<void> {
    // As `npm start` runs it: the compiled tree (deploy/build.ts), built by vitest's global setup
    // and at the start of each benchmark.
    if (!fs.existsSync(supervisor)) throw new Error('dist/ is missing: run `npm run build`');
    const log = fs.openSync(this.logFile, 'a');
    this.proc = spawn(process.execPath, [supervisor], {
      cwd: root,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    await this.waitReady();
  }

  async waitReady(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (this.proc?.exitCode !== null) throw new Error(`stack exited early; see ${this.logFile}\n${this.tail()}`);
      try {
        const res = await fetch(`${this.url}/healthz`);
        if (res.ok) return;
      } catch {
        /* not yet */
      }
      await sleep(100);
    }
    throw new Error(`stack not ready in ${timeoutMs} ms; see ${this.logFile}\n${this.tail()}`);
  }

  tail(lines = 40): string {
    try {
      return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  pid(child: 'control' | 'gateway'): number {
    return Number(fs.readFileSync(path.join(this.dataDir, 'run', `${child}.pid`), 'utf8'));
  }

  /** Sends a signal to one child (e.g. SIGKILL); the supervisor restarts it. */
  kill(child: 'control' | 'gateway', signal: NodeJS.Signals = 'SIGKILL'): number {
    const pid = this.pid(child);
    process.kill(pid, signal);
    return pid;
  }

  /** Waits until the supervisor has started a new child in place of `oldPid`. */
  async waitRestart(child: 'control' | 'gateway', oldPid: number, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      try {
        if (this.pid(child) !== oldPid) {
          if (child === 'control') await this.waitReady(until - Date.now());
          return;
        }
      } catch {
        /* pid file being rewritten */
      }
      await sleep(100);
    }
    throw new Error(`${child} was not restarted`);
  }

  async cli(...args: string[]): Promise<string> {
    const { stdout } = await exec(process.execPath, [path.join(dist, 'control/cli/main.js'), ...args], { cwd: root, env: { ...process.env, ...this.env } });
    return stdout;
  }

  /** The admin API the CLI uses, called directly (starting the CLI costs a Node start per call). */
  async admin(method: string, p: string, body?: unknown): Promise<any> {
    const token = fs.readFileSync(path.join(this.dataDir, 'admin-token'), 'utf8').trim();
    const r = await this.adminApi(method, p, token, body);
    if (r.status >= 300) throw new Error(`admin ${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  async createProject(slug = `p${Math.random().toString(36).slice(2, 10)}`, name = 'Test project'): Promise<Project> {
    return (await this.admin('POST', '/admin/v1/projects', { name, slug })) as Project;
  }

  /** `postgate plan set` through the admin API. */
  setPlan(slug: string, plan: string, limits: { daily_quota?: number; monthly_quota?: number; rate?: number } = {}): Promise<any> {
    return this.admin('POST', `/admin/v1/projects/${slug}/plan`, { plan, ...limits });
  }

  /** `postgate domain verify --force` through the admin API. */
  verifyDomain(slug: string, name: string): Promise<any> {
    return this.admin('POST', `/admin/v1/projects/${slug}/domains/verify`, { name, force: true });
  }

  /** The admin listener (POSTGATE_ADMIN_PORT), as the CLI reaches it. */
  get adminUrl(): string {
    return `http://127.0.0.1:${this.env.POSTGATE_ADMIN_PORT}`;
  }

  async api(
    method: string,
    p: string,
    key: string | undefined,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: any; headers: Headers }> {
    return request(this.url + p, method, key, body, headers);
  }

  /** A raw call to the admin listener: any token, any answer (admin() is the checked form). */
  async adminApi(
    method: string,
    p: string,
    token: string | undefined,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: any; headers: Headers }> {
    return request(this.adminUrl + p, method, token, body, headers);
  }

  /** Polls GET /v1/emails/:id until `done` holds. */
  async waitEmail(key: string, id: string, done: (email: any) => boolean, timeoutMs = 20_000): Promise<any> {
    const until = Date.now() + timeoutMs;
    let last: any;
    while (Date.now() < until) {
      last = (await this.api('GET', `/v1/emails/${id}`, key)).body;
      if (done(last)) return last;
      await sleep(100);
    }
    throw new Error(`email ${id} never reached the expected state; last: ${JSON.stringify(last)}`);
  }

  /** SIGTERM to the supervisor: both children drain and stop. */
  async stop(): Promise<number | null> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return proc?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.kill('SIGTERM');
    return exited;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function request(
  url: string,
  method: string,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
