// vitest global setup: compiles dist/ (deploy/build.ts) once, before any test starts a stack.
import { build } from '../../deploy/build.js';

export default function setup(): void {
  build();
}
