import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The stacks run the compiled tree, as `npm start` does: built once per run.
    globalSetup: ['test/helpers/build.ts'],
    // Each file starts real processes (Haraka, control, SMTP and DNS peers); two cores.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // What a test waits for with expect.poll crosses processes (a browser, a stack): vitest's 1 s
    // default failed a browser sign-in on a loaded CI machine.
    expect: { poll: { timeout: 10_000 } },
  },
});
