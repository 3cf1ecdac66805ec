// Wakes Events streams when new events are committed. Streams read the outbox
// itself; this only says "there is something after seq N now".
export class EventFeed {
  private last: number;
  private readonly waiters = new Set<() => void>();

  constructor(lastSeq: number) {
    this.last = lastSeq;
  }

  get lastSeq(): number {
    return this.last;
  }

  published(seq: number): void {
    if (seq <= this.last) return;
    this.last = seq;
    for (const wake of [...this.waiters]) wake();
  }

  /** Resolves once an event after `seq` has been committed, or when the signal aborts. */
  waitAfter(seq: number, signal: AbortSignal): Promise<void> {
    if (this.last > seq || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (this.last <= seq && !signal.aborted) return;
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', done);
    });
  }
}
