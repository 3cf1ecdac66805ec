// `postgate <command>`: the operator's CLI. It talks to the running control over
// the admin API (token from POSTGATE_ADMIN_TOKEN or the data dir), so every
// change is validated in one place and takes effect at once.
import { parseArgs } from 'node:util';
import { loadConfig, adminToken } from '../../core/config.js';

const usage = `usage: postgate <command> [options]   (every command takes --json)

  project create --name N --slug S     create a project; prints its live and test keys once
  project list
  project pause --project S            stop sending (SENDING_PAUSED)
  project resume --project S
  key create --project S --kind live|test [--scope all|auth]
  key list --project S
  key revoke --project S --id ID
`;

class CliError extends Error {}

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'boolean', default: false },
    name: { type: 'string' },
    slug: { type: 'string' },
    project: { type: 'string' },
    kind: { type: 'string' },
    scope: { type: 'string' },
    id: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

const config = loadConfig();
const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
const baseUrl = process.env.POSTGATE_ADMIN_URL || `http://${host.includes(':') ? `[${host}]` : host}:${config.httpPort}`;

async function call(method: string, path: string, body?: unknown): Promise<any> {
  let res: Response;
  try {
    res = await fetch(baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${adminToken(config)}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new CliError(`cannot reach postgate at ${baseUrl}; is it running (npm start)?`);
  }
  const data = (await res.json().catch(() => ({}))) as { error?: string; code?: string };
  if (!res.ok) throw new CliError(`${data.error ?? res.statusText} (${data.code ?? res.status})`);
  return data;
}

const need = (name: keyof typeof opts): string => {
  const v = opts[name];
  if (typeof v !== 'string' || !v) throw new CliError(`--${name} is required`);
  return v;
};
const slug = () => encodeURIComponent(need('project'));

function table(rows: Array<Record<string, unknown>>): string {
  if (!rows.length) return '(none)';
  const cols = Object.keys(rows[0]!);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(width[i]!)).join('  ').trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ''))))].join('\n');
}

async function run(): Promise<{ data: unknown; text: string }> {
  const [group, action] = positionals;
  switch (`${group} ${action}`) {
    case 'project create': {
      const d = await call('POST', '/admin/v1/projects', { name: need('name'), slug: need('slug') });
      return { data: d, text: `project ${d.slug} (${d.id})\nlive key: ${d.keys.live}\ntest key: ${d.keys.test}\nKeys are shown once; store them now.` };
    }
    case 'project list': {
      const d = await call('GET', '/admin/v1/projects');
      return { data: d.data, text: table(d.data) };
    }
    case 'project pause':
    case 'project resume': {
      const d = await call('POST', `/admin/v1/projects/${slug()}/${action}`);
      return { data: d, text: `${d.slug}: ${d.status}` };
    }
    case 'key create': {
      const kind = need('kind');
      const d = await call('POST', `/admin/v1/projects/${slug()}/keys`, { kind, ...(opts.scope ? { scope: opts.scope } : {}) });
      return { data: d, text: `${d.kind} key (${d.scope}) ${d.id}\n${d.key}\nShown once; store it now.` };
    }
    case 'key list': {
      const d = await call('GET', `/admin/v1/projects/${slug()}/keys`);
      return { data: d.data, text: table(d.data) };
    }
    case 'key revoke': {
      const d = await call('DELETE', `/admin/v1/projects/${slug()}/keys/${encodeURIComponent(need('id'))}`);
      return { data: d, text: `revoked ${d.id}` };
    }
    default:
      throw new CliError(group ? `unknown command: ${positionals.join(' ')}\n\n${usage}` : usage);
  }
}

if (opts.help) {
  process.stdout.write(usage);
} else {
  try {
    const out = await run();
    process.stdout.write((opts.json ? JSON.stringify(out.data, null, 2) : out.text) + '\n');
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`postgate: ${err.message}\n`);
    process.exitCode = 1;
  }
}
