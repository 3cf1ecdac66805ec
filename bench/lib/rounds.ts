// Several HTTP servers measured in alternating rounds with one load generator (bench/lib/http-load.ts),
// so load from outside the run falls on all alike: requests/s and the server's CPU µs per request over
// every round, the median round's p50 and p99. The server's CPU is read from /proc (bench/lib/proc.ts).
import { type HttpGenerator, type HttpRequest, type HttpRun, httpLoad } from './http-load.js';
import { cpuMs } from './proc.js';

export interface RoundTarget {
  name: string;
  req: HttpRequest;
  /** The server's processes (each with its descendants). */
  pids: () => number[];
}

export interface RoundFigures {
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU per request, µs. */
  cpuUs: number;
  /** Requests/s of each round. */
  rounds: number[];
}

export interface RoundOptions {
  connections: number;
  /** Seconds per target, split over the rounds. */
  seconds: number;
  rounds: number;
  /** Seconds of unmeasured load per target first. */
  warmup: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function run(gen: HttpGenerator, t: RoundTarget, connections: number, seconds: number): Promise<HttpRun & { cpu: number }> {
  const c0 = cpuMs(t.pids());
  const r = await httpLoad(gen, t.req, connections, seconds);
  const cpu = cpuMs(t.pids()) - c0;
  if (r.non2xx || r.errors) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { ...r, cpu };
}

/** The targets' figures, in their order; `log` hears each as it is known. */
export async function alternate(gen: HttpGenerator, targets: RoundTarget[], o: RoundOptions, log?: (msg: string) => void): Promise<RoundFigures[]> {
  for (const t of targets) await run(gen, t, o.connections, o.warmup);
  const results: Array<Array<HttpRun & { cpu: number }>> = targets.map(() => []);
  for (let round = 0; round < o.rounds; round++) {
    for (const [i, t] of targets.entries()) results[i]!.push(await run(gen, t, o.connections, o.seconds / o.rounds));
  }
  return results.map((rs, i) => {
    const requests = rs.reduce((n, r) => n + r.requests, 0);
    const f: RoundFigures = {
      rps: requests / rs.reduce((n, r) => n + r.seconds, 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: (rs.reduce((n, r) => n + r.cpu, 0) * 1000) / requests,
      rounds: rs.map((r) => Math.round(r.rps)),
    };
    log?.(
      `${targets[i]!.name}: ${Math.round(f.rps)} req/s, p50 ${f.p50} ms, p99 ${f.p99} ms, ${Math.round(f.cpuUs)} µs CPU/req (rounds: ${f.rounds.join(' ')} req/s)`,
    );
    return f;
  });
}
