// Vanilla Haraka for the deliverability benchmark: Haraka as it ships, configured as a relay.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

export interface VanillaHaraka {
  proc: ChildProcess;
  port: number;
  close(): Promise<void>;
}

/**
 * Haraka as it ships, configured as a relay: the relay plugin admits 127.0.0.1 (ACL) and
 * force-routes the benchmark domain to the sink, so it accepts over SMTP, queues to disk
 * (fsync) and delivers with its own outbound, as our gateway does; no plugins of ours.
 */
export async function startVanillaHaraka(
  root: string,
  listenPort: number,
  domain: string,
  sinkPort: number,
  concurrency: number,
  dnsServer: string,
): Promise<VanillaHaraka> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vanilla-haraka-'));
  const cfg = path.join(dir, 'config');
  // What `haraka -i` installs: the shipped defaults, then our few settings on top.
  fs.cpSync(path.join(root, 'node_modules/Haraka/config'), cfg, { recursive: true });
  const w = (name: string, lines: string[]) => fs.writeFileSync(path.join(cfg, name), `${lines.join('\n')}\n`);
  w('smtp.ini', [`listen=127.0.0.1:${listenPort}`, 'nodes=0']);
  w('plugins', ['relay']);
  w('relay.ini', ['[relay]', 'acl=true', 'force_routing=true', 'dest_domains=false']);
  w('relay_acl_allow', ['127.0.0.1/32']);
  w('relay_dest_domains.ini', ['[domains]', `${domain} = { "action": "continue", "nexthop": "127.0.0.1:${sinkPort}" }`]);
  w('outbound.ini', ['enable_tls=true', `concurrency_max=${concurrency}`, 'received_header=vanilla']);
  w('me', ['vanilla.bench.test']);
  w('log.ini', ['[main]', 'level=warn', 'timestamps=false']);
  const preload = path.join(root, 'bench/deliverability/dns-preload.cjs');
  const proc = spawn(process.execPath, ['--require', preload, path.join(root, 'node_modules/Haraka/bin/haraka'), '-c', dir], {
    cwd: root,
    env: { ...process.env, BENCH_DNS: dnsServer },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => lines.push(l));
  readline.createInterface({ input: proc.stdout! }).on('line', (l) => lines.push(l));
  // Ready when its port answers (at log level warn it does not say so).
  const until = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`vanilla Haraka exited (${proc.exitCode}):\n${lines.slice(-20).join('\n')}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(listenPort, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => {
        s.destroy();
        resolve(false);
      });
    });
    if (open) break;
    if (Date.now() > until) throw new Error(`vanilla Haraka did not listen:\n${lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    proc,
    port: listenPort,
    async close() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGINT');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
