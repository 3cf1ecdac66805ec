// Postfix + OpenDKIM as a self-hoster sets them up to relay an application's mail: Debian's
// postfix and opendkim packages (installed here with apt-get when running as root and missing),
// a Postfix instance of its own (a config directory with its own queue_directory, started with
// `postfix -c <dir> start-fg`, so the system's instance, if any, is untouched), listening on a
// free loopback port, mynetworks=127.0.0.0/8, relayhost = the benchmark's receiver, every
// message signed by OpenDKIM as a milter (RSA-2048, relaxed/relaxed, as postgate signs).
// Everything lives in a temporary directory that close() removes.
//
// Left at Postfix's defaults otherwise: the queue is on disk with fsync, one smtpd process per
// client connection, 20 concurrent deliveries to the relay host, connection caching on demand.
// Postfix logs to syslog; with no syslog daemon (as in a container) the lines are dropped
// (BENCH_POSTFIX_LOG=1 writes them to <dir>/maillog through postlogd instead).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const POSTFIX = '/usr/sbin/postfix';
const OPENDKIM = '/usr/sbin/opendkim';
export const SMTP_SOURCE = '/usr/sbin/smtp-source';

/** Whether Postfix, OpenDKIM and smtp-source are here; installs them as root when missing. Returns why not, if not. */
export function ensurePostfix(): string | undefined {
  const have = () => [POSTFIX, OPENDKIM, SMTP_SOURCE].every((f) => fs.existsSync(f));
  if (have()) return undefined;
  if (process.getuid?.() !== 0) return 'postfix/opendkim are not installed and this is not root (apt-get install postfix opendkim opendkim-tools)';
  process.stderr.write('[bench] installing postfix, opendkim and opendkim-tools (apt-get)\n');
  // No system mail configuration, and no daemon started by the packages' scripts: the benchmark
  // runs its own instances. policy-rc.d is Debian's switch for "do not start services now".
  spawnSync('debconf-set-selections', { input: 'postfix postfix/main_mailer_type select No configuration\n' });
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !fs.existsSync(policy);
  if (ownPolicy) fs.writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () =>
      spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'postfix', 'opendkim', 'opendkim-tools'], { stdio: 'inherit', env });
    if (install().status !== 0) {
      spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
      install();
    }
  } finally {
    if (ownPolicy) fs.rmSync(policy, { force: true });
  }
  return have() ? undefined : 'apt-get could not install postfix and opendkim';
}

export interface PostfixOptions {
  listenPort: number;
  milterPort: number;
  relayPort: number;
  /** The signing domain (the From domain of the load). */
  domain: string;
  /** Opportunistic TLS to the relay (`smtp_tls_security_level = may`, as Debian's main.cf ships); otherwise none. */
  tls?: boolean;
  /** Concurrent deliveries to the relay (`default_destination_concurrency_limit`, 20 as shipped), with smtp processes enough for them (at least the shipped 100). */
  connections?: number;
}

export interface PostfixInstance {
  port: number;
  /** The roots of its process trees: `postfix start-fg` (master and every daemon below it) and opendkim. */
  pids(): number[];
  close(): Promise<void>;
}

const MASTER_CF = (port: number) => `# service type private unpriv chroot wakeup maxproc command
127.0.0.1:${port} inet n - n - - smtpd
cleanup   unix n - n - 0 cleanup
qmgr      unix n - n 300 1 qmgr
rewrite   unix - - n - - trivial-rewrite
bounce    unix - - n - 0 bounce
defer     unix - - n - 0 bounce
trace     unix - - n - 0 bounce
verify    unix - - n - 1 verify
flush     unix n - n 1000? 0 flush
proxymap  unix - - n - - proxymap
smtp      unix - - n - - smtp
relay     unix - - n - - smtp
showq     unix n - n - - showq
error     unix - - n - - error
retry     unix - - n - - error
discard   unix - - n - - discard
anvil     unix - - n - 1 anvil
scache    unix - - n - 1 scache
tlsmgr    unix - - n 1000? 1 tlsmgr
postlog   unix-dgram n - n - 1 postlogd
`;

async function listening(port: number, proc: ChildProcess, what: string, log: () => string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited (${proc.exitCode}):\n${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`${what} did not listen on ${port}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startPostfix(o: PostfixOptions): Promise<PostfixInstance> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-postfix-'));
  fs.chmodSync(dir, 0o755); // the postfix and opendkim users must reach their files
  const etc = path.join(dir, 'etc');
  const queue = path.join(dir, 'queue');
  const data = path.join(dir, 'data');
  for (const d of [etc, queue, data]) fs.mkdirSync(d);
  spawnSync('chown', ['postfix', data]);

  // OpenDKIM: an RSA-2048 key, as postgate's domains get.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = path.join(dir, 'dkim.key');
  fs.writeFileSync(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
  spawnSync('chown', ['opendkim', keyFile]);
  const dkimConf = path.join(dir, 'opendkim.conf');
  fs.writeFileSync(
    dkimConf,
    [
      'Syslog no',
      'Mode s',
      `Socket inet:${o.milterPort}@127.0.0.1`,
      `Domain ${o.domain}`,
      'Selector bench',
      `KeyFile ${keyFile}`,
      'Canonicalization relaxed/relaxed',
      'SignatureAlgorithm rsa-sha256',
      'UserID opendkim',
      'Background no',
      'RequireSafeKeys false',
      '',
    ].join('\n'),
  );
  const logs: string[] = [];
  const keep = (p: ChildProcess) => {
    p.stdout?.on('data', (c: Buffer) => logs.push(c.toString()));
    p.stderr?.on('data', (c: Buffer) => logs.push(c.toString()));
  };
  const dkim = spawn(OPENDKIM, ['-f', '-x', dkimConf], { stdio: ['ignore', 'pipe', 'pipe'] });
  keep(dkim);
  await listening(o.milterPort, dkim, 'opendkim', () => logs.join(''));

  const withLog = process.env.BENCH_POSTFIX_LOG === '1';
  const main = [
    'compatibility_level = 3.6',
    `queue_directory = ${queue}`,
    `data_directory = ${data}`,
    'mail_owner = postfix',
    'setgid_group = postdrop',
    'myhostname = postfix.bench.test',
    'mydestination =',
    'relay_domains =',
    'local_recipient_maps =',
    'alias_maps =',
    'alias_database =',
    'inet_interfaces = 127.0.0.1',
    'inet_protocols = ipv4',
    'mynetworks = 127.0.0.0/8',
    `relayhost = [127.0.0.1]:${o.relayPort}`,
    'smtpd_tls_security_level = none',
    // With TLS, Postfix's defaults otherwise: smtp_tls_connection_reuse stays off, so a TLS session is not reused.
    `smtp_tls_security_level = ${o.tls ? 'may' : 'none'}`,
    'biff = no',
    ...(o.connections ? [`default_destination_concurrency_limit = ${o.connections}`, `default_process_limit = ${Math.max(100, o.connections + 50)}`] : []),
    `smtpd_milters = inet:127.0.0.1:${o.milterPort}`,
    'non_smtpd_milters = $smtpd_milters',
    // A message the milter could not sign is not sent unsigned.
    'milter_default_action = tempfail',
    ...(withLog ? [`maillog_file_prefixes = ${dir}`, `maillog_file = ${path.join(dir, 'maillog')}`] : []),
  ];
  fs.writeFileSync(path.join(etc, 'main.cf'), `${main.join('\n')}\n`);
  fs.writeFileSync(path.join(etc, 'master.cf'), MASTER_CF(o.listenPort));
  const postfix = spawn(POSTFIX, ['-c', etc, 'start-fg'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  keep(postfix);
  const maillog = () => {
    try {
      return fs.readFileSync(path.join(dir, 'maillog'), 'utf8').split('\n').slice(-20).join('\n');
    } catch {
      return logs.join('') || '(no log: set BENCH_POSTFIX_LOG=1)';
    }
  };
  try {
    await listening(o.listenPort, postfix, 'postfix', maillog);
  } catch (err) {
    dkim.kill('SIGTERM');
    throw err;
  }

  return {
    port: o.listenPort,
    pids: () => [postfix.pid!, dkim.pid!].filter((p) => p !== undefined),
    async close() {
      const exited = (p: ChildProcess) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', r)));
      spawnSync(POSTFIX, ['-c', etc, 'stop'], { stdio: 'ignore' });
      await Promise.race([exited(postfix), new Promise((r) => setTimeout(r, 15_000))]);
      if (postfix.exitCode === null) postfix.kill('SIGKILL');
      dkim.kill('SIGTERM');
      await Promise.race([exited(dkim), new Promise((r) => setTimeout(r, 10_000))]);
      if (dkim.exitCode === null) dkim.kill('SIGKILL');
      if (withLog) process.stderr.write(`[bench] postfix log kept in ${path.join(dir, 'maillog')}\n`);
      else fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
