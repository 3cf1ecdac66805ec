// The one place a credential is read from a request: the API key from HTTP headers
// (`X-Service-Key`, else `Authorization: Bearer`) or from gRPC metadata (the same
// names, lowercase as gRPC carries them), and the bearer token of a header.
import type { IncomingHttpHeaders } from 'node:http';
import type { Metadata } from '@grpc/grpc-js';

/** The token of an `Authorization: Bearer <token>` value, or undefined. */
export function bearer(authorization: unknown): string | undefined {
  return typeof authorization === 'string' && authorization.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined;
}

// X-Service-Key wins, so a session route can take the key there and the session token in Authorization.
function apiKey(serviceKey: unknown, authorization: unknown): string | undefined {
  if (typeof serviceKey === 'string' && serviceKey) return serviceKey.trim();
  return bearer(authorization);
}

/** The plain API key an HTTP request carries. */
export const fromHeaders = (headers: IncomingHttpHeaders): string | undefined => apiKey(headers['x-service-key'], headers.authorization);

/** The plain API key a gRPC call carries. */
export const fromMetadata = (metadata: Metadata): string | undefined => apiKey(metadata.get('x-service-key')[0], metadata.get('authorization')[0]);

/** The bearer token of an HTTP request (on the session routes: the session token). */
export const bearerOf = (headers: IncomingHttpHeaders): string | undefined => bearer(headers.authorization);
