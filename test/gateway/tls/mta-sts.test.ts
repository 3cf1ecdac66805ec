import { describe, expect, it } from 'vitest';
import { mxMatches, parsePolicy, parseStsRecord, policyAllows } from '../../../gateway/tls/mta-sts.js';

describe('the _mta-sts TXT record', () => {
  it('gives the id of the one v=STSv1 record, ignoring records that are not ours', () => {
    expect(parseStsRecord(['v=STSv1; id=20160831085700Z;'])).toEqual({ ok: true, value: '20160831085700Z' });
    expect(parseStsRecord(['v=spf1 -all', 'v=STSv1;id=abc123'])).toEqual({ ok: true, value: 'abc123' });
    expect(parseStsRecord(['v=STSv1; id=abc; ext=value'])).toEqual({ ok: true, value: 'abc' });
  });
  it('says no policy without a record, and refuses two records or a malformed one', () => {
    expect(parseStsRecord([])).toBeUndefined();
    expect(parseStsRecord(['v=spf1 -all'])).toBeUndefined();
    expect(parseStsRecord(['v=STSv1; id=a', 'v=STSv1; id=b'])).toMatchObject({ ok: false, error: expect.stringContaining('2 v=STSv1 records') });
    expect(parseStsRecord(['v=STSv1;'])).toMatchObject({ ok: false, error: 'no id field' });
    expect(parseStsRecord(['v=STSv1; id=has-dash'])).toMatchObject({ ok: false });
    expect(parseStsRecord([`v=STSv1; id=${'a'.repeat(33)}`])).toMatchObject({ ok: false });
    expect(parseStsRecord(['v=STSv1; id abc'])).toMatchObject({ ok: false, error: expect.stringContaining('malformed field') });
    // The version must lead: "v=STSv10" is not ours.
    expect(parseStsRecord(['v=STSv10; id=a'])).toBeUndefined();
  });
});

describe('the policy file', () => {
  const policy = (lines: string[], eol = '\r\n') => parsePolicy(lines.join(eol));
  it('reads RFC 8461 example policies, CRLF or LF, unknown keys ignored', () => {
    expect(policy(['version: STSv1', 'mode: enforce', 'mx: mail.example.com', 'mx: *.example.net', 'mx: backupmx.example.com', 'max_age: 604800'])).toEqual({
      ok: true,
      value: { mode: 'enforce', mx: ['mail.example.com', '*.example.net', 'backupmx.example.com'], maxAge: 604800 },
    });
    expect(policy(['version: STSv1', 'mode: testing', 'mx: MX.Example.COM.', 'max_age: 86400', 'future_key: x', ''], '\n')).toEqual({
      ok: true,
      value: { mode: 'testing', mx: ['mx.example.com'], maxAge: 86400 },
    });
    expect(policy(['version: STSv1', 'mode: none', 'max_age: 0'])).toEqual({ ok: true, value: { mode: 'none', mx: [], maxAge: 0 } });
  });
  it('refuses what is missing, malformed, repeated or out of range', () => {
    const bad = (lines: string[], error: string) => expect(policy(lines)).toEqual({ ok: false, error: expect.stringContaining(error) });
    bad(['mode: enforce', 'mx: a.example', 'max_age: 1'], 'no version');
    bad(['version: STSv2', 'mode: enforce', 'mx: a.example', 'max_age: 1'], 'is not STSv1');
    bad(['version: STSv1', 'mx: a.example', 'max_age: 1'], 'no mode');
    bad(['version: STSv1', 'mode: strict', 'mx: a.example', 'max_age: 1'], 'is not enforce');
    bad(['version: STSv1', 'mode: enforce', 'mx: a.example'], 'no max_age');
    bad(['version: STSv1', 'mode: enforce', 'mx: a.example', 'max_age: 31557601'], 'max_age');
    bad(['version: STSv1', 'mode: enforce', 'mx: a.example', 'max_age: -1'], 'max_age');
    bad(['version: STSv1', 'mode: enforce', 'mx: a.example', 'max_age: 12345678901'], 'max_age');
    bad(['version: STSv1', 'mode: enforce', 'max_age: 60'], 'without any mx');
    bad(['version: STSv1', 'mode: enforce', 'mode: testing', 'mx: a.example', 'max_age: 60'], 'twice');
    bad(['version: STSv1', 'mode: enforce', 'mx: *.*.example', 'max_age: 60'], 'is not a host name');
    bad(['version: STSv1', 'mode: enforce', 'mx: mail.example.com/evil', 'max_age: 60'], 'is not a host name');
    bad(['version: STSv1', 'mode: enforce', 'mx: a.example', 'max_age: 60', '<html>'], 'malformed line');
    expect(parsePolicy('<!doctype html><html><body>Not found</body></html>').ok).toBe(false);
    expect(parsePolicy('').ok).toBe(false);
  });
});

describe('mx patterns', () => {
  it('match a host exactly, case and trailing dot aside', () => {
    expect(mxMatches('mail.example.com', 'mail.example.com')).toBe(true);
    expect(mxMatches('MAIL.example.com.', 'mail.example.com')).toBe(true);
    expect(mxMatches('mail2.example.com', 'mail.example.com')).toBe(false);
    expect(mxMatches('evilmail.example.com', 'mail.example.com')).toBe(false);
  });
  it('a wildcard stands for one leftmost label only (RFC 8461 §4.1)', () => {
    expect(mxMatches('mx1.example.net', '*.example.net')).toBe(true);
    expect(mxMatches('a.b.example.net', '*.example.net')).toBe(false);
    expect(mxMatches('example.net', '*.example.net')).toBe(false);
    expect(mxMatches('mx1.evilexample.net', '*.example.net')).toBe(false);
    expect(mxMatches('.example.net', '*.example.net')).toBe(false);
  });
  it('a policy allows the hosts any of its patterns match', () => {
    const p = { mode: 'enforce' as const, mx: ['mail.example.com', '*.example.net'], maxAge: 60 };
    expect(policyAllows(p, 'mail.example.com')).toBe(true);
    expect(policyAllows(p, 'x.example.net')).toBe(true);
    expect(policyAllows(p, 'mx.attacker.test')).toBe(false);
  });
});
