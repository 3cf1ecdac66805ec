// vitest global setup: compiles dist/ (deploy/build.ts) and the console's front end into it
// (deploy/build-console.ts) once, before any test starts a stack.
import { build, dist } from '../../deploy/build.js';
import { buildConsole } from '../../deploy/build-console.js';

export default async function setup(): Promise<void> {
  build();
  await buildConsole(dist);
}
