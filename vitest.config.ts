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
  },
});
