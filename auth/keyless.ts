// The auth routes that take no key (the hosted widget's calls, page and files, the embed script, the
// OAuth callback) answer anyone, and any client can send an allowed Origin header. Each is counted per
// client address and, where it names a project, per project, on control's one limiter (429
// RATE_LIMIT_EXCEEDED with Retry-After past either), so a script cannot make them work, store or mail
// without bound.
import net from 'node:net';
import type { FastifyRequest } from 'fastify';
import type { AuthSettings } from '../core/config.js';
import { v6Bytes } from '../core/net/address-guard.js';
import type { Limiter } from './limiter.js';
import { connectionIp } from './region.js';
import { durations } from './settings.js';

/** An IPv6 client is counted by its /64: one host usually holds the whole prefix. */
export function addressKey(ip: string): string {
  if (net.isIPv6(ip)) {
    const b = v6Bytes(ip);
    const groups = [0, 2, 4, 6].map((i) => ((b[i]! << 8) | b[i + 1]!).toString(16));
    return `${groups.join(':')}::/64`;
  }
  return ip;
}

export class KeylessLimits {
  constructor(
    private readonly limiter: Limiter,
    private readonly settings: Pick<AuthSettings, 'keylessPerIpMinute' | 'keylessPerProjectMinute'>,
  ) {}

  /** Counts a request to `route` from the client's address: first, before anything is looked up. */
  ip(req: FastifyRequest, route: string): void {
    this.limiter.take(
      `auth:keyless-ip:${route}:${addressKey(connectionIp(req))}`,
      this.settings.keylessPerIpMinute,
      durations.MINUTE,
      (s) => `Too many requests from this address; try again in ${s} s`,
    );
  }

  /**
   * Counts a request to `route` for a project, once the project is known and the request passed its origin
   * checks (a refused one is counted per address only, so a foreign page cannot use up the project's share).
   */
  project(route: string, projectId: string): void {
    this.limiter.take(
      `auth:keyless-project:${route}:${projectId}`,
      this.settings.keylessPerProjectMinute,
      durations.MINUTE,
      (s) => `Too many sign-in requests for this project; try again in ${s} s`,
    );
  }
}
