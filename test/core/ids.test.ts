// The ids core mints: prefixed ids (webhook messages, audit events) and time-ordered UUIDv7s.
import { describe, expect, it } from 'vitest';
import { prefixedId, uuidv7 } from '../../core/ids.js';

describe('prefixedId', () => {
  it('is the prefix, an underscore and 32 hex digits, never the same twice', () => {
    const ids = Array.from({ length: 1000 }, () => prefixedId('msg'));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(prefixedId('evt')).toMatch(/^evt_[0-9a-f]{32}$/);
  });
});

describe('uuidv7', () => {
  it('is a version 7 UUID whose first 48 bits are the time, so later ids sort after earlier ones', () => {
    const a = uuidv7(1_700_000_000_000);
    const b = uuidv7(1_700_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(a.replace(/-/g, '').slice(0, 12), 16)).toBe(1_700_000_000_000);
    expect(a < b).toBe(true);
  });
});
