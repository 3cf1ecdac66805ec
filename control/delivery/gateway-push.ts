// What control keeps and every gateway must hold (the throttles, the operator's controls), pushed to
// one gateway: tried again each second until the gateway takes it, and a newer push to the same
// gateway supersedes one still trying (it carries what is in force by then).
import type { Logger } from '../../core/log.js';
import type { Gateway } from './gateways.js';

const PUSH_RETRY_MS = 1000;

export class GatewayPush {
  private readonly runs = new Map<string, number>();

  constructor(
    /** What is pushed, for the log line of a failed try. */
    private readonly what: string,
    private readonly log: Logger,
  ) {}

  /** send()'s answer once the gateway took it; undefined when a newer push superseded this one. */
  async push<T>(gw: Gateway, send: () => Promise<T>): Promise<T | undefined> {
    const run = (this.runs.get(gw.name) ?? 0) + 1;
    this.runs.set(gw.name, run);
    for (;;) {
      try {
        return await send();
      } catch (err) {
        this.log.debug({ gateway: gw.name, err: (err as Error).message }, `${this.what} not pushed yet; retrying`);
        await new Promise((r) => setTimeout(r, PUSH_RETRY_MS).unref());
        if (this.runs.get(gw.name) !== run) return undefined;
      }
    }
  }
}
