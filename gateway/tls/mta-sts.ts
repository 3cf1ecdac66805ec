// MTA-STS (RFC 8461), the pure part: the `_mta-sts` TXT record, the policy file, and which MX
// host names a policy allows. The lookups and the cache are in sts-policies.ts.

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  mode: StsMode;
  /** MX patterns: a host name, or `*.` and a domain (one leftmost label), lower case, no trailing dot. */
  mx: string[];
  /** Seconds the policy may be kept (RFC 8461 §3.2: at most 31557600). */
  maxAge: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const MAX_AGE_LIMIT = 31_557_600;
/** A host name or a `*.` wildcard over one: LDH labels of 1-63, 253 in all. */
const PATTERN = /^(\*\.)?(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The policy id of a domain's `_mta-sts` TXT answer (each record as its strings, joined). Records that do not
 * begin `v=STSv1` are not ours; none means no policy (undefined); more than one, or one that is malformed,
 * means no policy either (§3.1), said with a reason.
 */
export function parseStsRecord(records: readonly string[]): Parsed<string> | undefined {
  const ours = records.filter((r) => /^v=STSv1\s*(;|$)/.test(r));
  if (!ours.length) return undefined;
  if (ours.length > 1) return { ok: false, error: `${ours.length} v=STSv1 records (exactly one is required)` };
  let id: string | undefined;
  for (const field of ours[0]!.split(';')) {
    const f = field.trim();
    if (!f) continue;
    const m = /^([A-Za-z0-9_.-]+)=([\x21-\x3a\x3c\x3e-\x7e]*)$/.exec(f);
    if (!m) return { ok: false, error: `malformed field ${JSON.stringify(f.slice(0, 60))}` };
    if (m[1] === 'id') id = m[2];
  }
  if (id === undefined) return { ok: false, error: 'no id field' };
  if (!/^[A-Za-z0-9]{1,32}$/.test(id)) return { ok: false, error: `id ${JSON.stringify(id.slice(0, 40))} is not 1-32 letters and digits` };
  return { ok: true, value: id };
}

/**
 * A policy file (§3.2): `key: value` lines (CRLF or LF), version STSv1, mode, max_age and, unless the mode is
 * none, at least one mx. Unknown keys are ignored; a known key that is malformed or repeated (but mx) refuses
 * the whole policy, as does a missing one.
 */
export function parsePolicy(text: string): Parsed<StsPolicy> {
  const seen = new Map<string, string>();
  const mx: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/[ \t]+$/, '');
    if (!line) continue;
    const m = /^([A-Za-z0-9_]+):[ \t]*(.*)$/.exec(line);
    if (!m) return { ok: false, error: `malformed line ${JSON.stringify(line.slice(0, 60))}` };
    const key = m[1]!;
    const value = m[2]!;
    if (key === 'mx') {
      const pattern = value.toLowerCase().replace(/\.$/, '');
      if (!PATTERN.test(pattern)) return { ok: false, error: `mx ${JSON.stringify(value.slice(0, 60))} is not a host name or *.domain` };
      mx.push(pattern);
      continue;
    }
    if (!['version', 'mode', 'max_age'].includes(key)) continue;
    if (seen.has(key)) return { ok: false, error: `${key} is given twice` };
    seen.set(key, value);
  }
  const version = seen.get('version');
  if (version !== 'STSv1') return { ok: false, error: version === undefined ? 'no version' : `version ${JSON.stringify(version)} is not STSv1` };
  const mode = seen.get('mode');
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none')
    return { ok: false, error: mode === undefined ? 'no mode' : `mode ${JSON.stringify(mode)} is not enforce, testing or none` };
  const age = seen.get('max_age');
  if (age === undefined) return { ok: false, error: 'no max_age' };
  if (!/^\d{1,10}$/.test(age) || Number(age) > MAX_AGE_LIMIT) return { ok: false, error: `max_age ${JSON.stringify(age)} is not 0-${MAX_AGE_LIMIT}` };
  if (mode !== 'none' && !mx.length) return { ok: false, error: `mode ${mode} without any mx` };
  return { ok: true, value: { mode, mx, maxAge: Number(age) } };
}

/** Whether an MX host name matches one pattern: exactly, or `*.d` for one label before d (§4.1). */
export function mxMatches(host: string, pattern: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  const p = pattern.toLowerCase().replace(/\.$/, '');
  if (!p.startsWith('*.')) return h === p;
  const rest = p.slice(1);
  if (!h.endsWith(rest)) return false;
  const label = h.slice(0, -rest.length);
  return label.length > 0 && !label.includes('.');
}

/** Whether the policy lists this MX host. */
export function policyAllows(policy: StsPolicy, host: string): boolean {
  return policy.mx.some((p) => mxMatches(host, p));
}
