import { describe, expect, it } from 'vitest';
import { tlsFromJson } from '../../../gateway/tls/tls-info.js';

describe('an outbox row’s tls column', () => {
  it('reads back what outcome.ts wrote', () => {
    const info = { used: true, version: 'TLSv1.3', verified: true, policy: 'mta-sts', note: '' };
    expect(tlsFromJson(JSON.stringify(info))).toEqual(info);
  });
  it('is nothing when empty or unreadable, and never carries a policy name it does not know', () => {
    expect(tlsFromJson('')).toBeUndefined();
    expect(tlsFromJson('{not json')).toBeUndefined();
    expect(tlsFromJson('{"used":"yes","policy":"<script>","version":3}')).toEqual({ used: false, version: '3', verified: false, policy: '', note: '' });
  });
});
