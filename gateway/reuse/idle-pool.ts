// Idle SMTP connections kept for the next message to the same MX (gateway/hooks/connection-reuse.ts
// hands them to Haraka). Pure bookkeeping: which connections are idle per route (MX address, port,
// our address and EHLO name) and per pacing gate (a provider, or a domain of `other`), each with a
// timer that gives it up when it has been idle too long.

export class IdlePool<C> {
  /** Per route, oldest first: the newest is taken first, so the others age out and close. */
  private readonly byRoute = new Map<string, C[]>();
  private readonly entries = new Map<C, { route: string; gate: string; timer: NodeJS.Timeout }>();
  private readonly perGate = new Map<string, number>();

  constructor(
    private readonly idleMs: number,
    /** Called for a connection whose idle time ran out (already removed from the pool). */
    private readonly expired: (conn: C) => void,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  put(conn: C, route: string, gate: string): void {
    if (this.entries.has(conn)) return;
    const timer = setTimeout(() => this.remove(conn) && this.expired(conn), this.idleMs);
    timer.unref();
    this.entries.set(conn, { route, gate, timer });
    const list = this.byRoute.get(route);
    if (list) list.push(conn);
    else this.byRoute.set(route, [conn]);
    this.perGate.set(gate, (this.perGate.get(gate) ?? 0) + 1);
  }

  /** The most recently parked connection of the route that `usable` accepts, removed from the pool. */
  take(route: string, usable: (conn: C) => boolean): C | undefined {
    const list = this.byRoute.get(route);
    if (!list) return undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      const conn = list[i]!;
      if (!usable(conn)) continue;
      this.remove(conn);
      return conn;
    }
    return undefined;
  }

  /** False when it was not in the pool. */
  remove(conn: C): boolean {
    const e = this.entries.get(conn);
    if (!e) return false;
    clearTimeout(e.timer);
    this.entries.delete(conn);
    const list = this.byRoute.get(e.route)!;
    list.splice(list.indexOf(conn), 1);
    if (!list.length) this.byRoute.delete(e.route);
    const n = this.perGate.get(e.gate)! - 1;
    if (n) this.perGate.set(e.gate, n);
    else this.perGate.delete(e.gate);
    return true;
  }

  /** Idle connections per gate (metrics). */
  idleByGate(): Iterable<[gate: string, idle: number]> {
    return this.perGate.entries();
  }

  idleAt(gate: string): number {
    return this.perGate.get(gate) ?? 0;
  }

  /** Removes the gate's oldest idle connections until at most `keep` are left, and returns them. */
  trim(gate: string, keep: number): C[] {
    const out: C[] = [];
    for (const [conn, e] of this.entries) {
      if (this.idleAt(gate) <= keep) break;
      if (e.gate !== gate) continue;
      this.remove(conn);
      out.push(conn);
    }
    return out;
  }

  /** Empties the pool (shutdown). */
  clear(): C[] {
    const all = [...this.entries.keys()];
    for (const conn of all) this.remove(conn);
    return all;
  }
}
