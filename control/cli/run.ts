// The operator's CLI, whatever commands it is given (control/cli/main.ts composes them).
// It talks to the running control over the admin API (token from POSTGATE_ADMIN_TOKEN
// or the data dir), so every change is validated in one place and takes effect at once.
import { loadConfig } from '../../core/config.js';
import { adminToken } from '../../core/secrets.js';
import { CliError, type CliContext, type Commands } from '../../core/cli-commands.js';

const FLAGS = new Set(['json', 'help', 'force', 'now']);

/** `--name value`, `--name=value` and the boolean flags above; everything else is positional. */
function parse(argv: string[]): { opts: Record<string, string | boolean>; positionals: string[] } {
  const opts: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h') opts.help = true;
    else if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = a.slice(2, eq > 0 ? eq : undefined);
      if (eq > 0) opts[name] = a.slice(eq + 1);
      else if (FLAGS.has(name)) opts[name] = true;
      else if (i + 1 < argv.length) opts[name] = argv[++i]!;
      else throw new CliError(`--${name} needs a value`);
    } else positionals.push(a);
  }
  return { opts, positionals };
}

/** Runs the command named by the process's arguments and writes its answer; a usage error exits 1. */
export async function runCli(commands: Commands): Promise<void> {
  const usage = `usage: postgate <command> [options]   (every command takes --json)\n\n${Object.values(commands)
    .map((c) => `  ${c.usage}`)
    .join('\n')}\n`;

  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`postgate: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const { opts, positionals } = parsed;

  const config = loadConfig();
  // The admin listener (POSTGATE_ADMIN_HOST/PORT); a wildcard bind is reached on loopback.
  const host = config.adminHost === '0.0.0.0' ? '127.0.0.1' : config.adminHost === '::' ? '::1' : config.adminHost;
  const baseUrl = process.env.POSTGATE_ADMIN_URL || `http://${host.includes(':') ? `[${host}]` : host}:${config.adminPort}`;

  const ctx: CliContext = {
    opts,
    positionals: positionals.slice(2),
    async call(method, path, body) {
      let res: Response;
      try {
        res = await fetch(baseUrl + path, {
          method,
          headers: { authorization: `Bearer ${adminToken(config)}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          body: body !== undefined ? JSON.stringify(body) : undefined,
        });
      } catch {
        throw new CliError(`cannot reach postgate at ${baseUrl}; is it running (npm start)?`);
      }
      const data = (await res.json().catch(() => ({}))) as { error?: string; code?: string };
      if (!res.ok) throw new CliError(`${data.error ?? res.statusText} (${data.code ?? res.status})`);
      return data;
    },
    need(name) {
      const v = opts[name];
      if (typeof v !== 'string' || !v) throw new CliError(`--${name} is required`);
      return v;
    },
    slug() {
      return encodeURIComponent(ctx.need('project'));
    },
    fail(message) {
      throw new CliError(message);
    },
    table(rows) {
      if (!rows.length) return '(none)';
      const cols = Object.keys(rows[0]!);
      const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
      const line = (vals: string[]) =>
        vals
          .map((v, i) => v.padEnd(width[i]!))
          .join('  ')
          .trimEnd();
      return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ''))))].join('\n');
    },
  };

  const command = commands[positionals.slice(0, 2).join(' ')];
  if (opts.help || !command) {
    process.stdout.write(positionals.length && !opts.help ? `unknown command: ${positionals.join(' ')}\n\n${usage}` : usage);
    if (positionals.length && !opts.help) process.exitCode = 1;
  } else {
    try {
      const out = await command.run(ctx);
      process.stdout.write(`${opts.json ? JSON.stringify(out.data, null, 2) : out.text}\n`);
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      process.stderr.write(`postgate: ${err.message}\n`);
      process.exitCode = 1;
    }
  }
}
