// Unit tests mirror the source: `core/x/y.ts` is tested in `test/core/x/y.test.ts`. This prints
// which modules have no test there yet (information, not a rule: many are wiring, routes or types
// that the end-to-end tests in test/e2e/ cover) and checks that the scan is not blind.
import { expect, it } from 'vitest';
import { modules, report } from './helpers/mirror.js';

it('lists the source modules without a unit test at the mirrored path (information only)', () => {
  const list = modules();
  console.info(report(list));
  // The scan sees the tree: every folder, and tests that are known to be where they belong.
  expect(list.length).toBeGreaterThan(150);
  for (const m of ['auth/codes.ts', 'core/clock.ts', 'common/address.ts', 'gateway/mime.ts', 'control/mail/attachments.ts'])
    expect(list.find((x) => x.file === m)?.tested, m).toBe(true);
});
