// Deterministic random numbers for the tests that try many generated inputs: a failure names an
// input that comes out the same on every run.

/** glibc's linear congruential generator, in [0, 1). */
export function lcg(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/** The Numerical Recipes generator (32 bits), in [0, 1). */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Fewer than `max` of `pieces`, drawn with `next`, joined. */
export function piecesText(next: () => number, pieces: readonly string[], max: number): string {
  let text = '';
  for (let i = Math.floor(next() * max); i > 0; i--) text += pieces[Math.floor(next() * pieces.length)];
  return text;
}
