// The hello-world baseline every benchmark measures next to postgate: a bare
// Fastify process (bench/lib/hello.ts) with one route and logging off.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * `body`: what the route answers (JSON text) instead of {"hello":"world"}; `raw`: node:http answers POST /;
 * `storeDir`: Fastify's POST / records the email in postgate's store in that data dir first (bench/lib/hello.ts).
 */
export async function startHello(body?: string, raw = false, storeDir?: string): Promise<{ proc: ChildProcess; url: string }> {
  const env = {
    ...process.env,
    ...(body === undefined ? {} : { HELLO_BODY: body }),
    ...(raw ? { HELLO_RAW: '1' } : {}),
    ...(storeDir ? { HELLO_STORE: storeDir } : {}),
  };
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench/lib/hello.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`hello-world exited (${code})`)));
    readline.createInterface({ input: proc.stdout! }).on('line', (l) => {
      const m = /^listening (\d+)$/.exec(l);
      if (m) resolve(m[1]!);
    });
  });
  return { proc, url: `http://127.0.0.1:${port}` };
}

export async function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}
