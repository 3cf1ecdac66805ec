// An HTTP peer on loopback inside the test's own process (a provider's API, a JWKS endpoint): each
// request is recorded and answered by the handler of its path. No other process, no network.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PeerRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface PeerAnswer {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  text?: string;
}

export interface HttpPeer {
  url: string;
  requests: PeerRequest[];
  close(): Promise<void>;
}

export async function httpPeer(routes: Record<string, (r: PeerRequest) => PeerAnswer>): Promise<HttpPeer> {
  const requests: PeerRequest[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://peer');
      const r: PeerRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body };
      requests.push(r);
      const handler = routes[u.pathname];
      const a: PeerAnswer = handler ? handler(r) : { status: 404, json: { error: 'not_found' } };
      const text = a.json !== undefined ? JSON.stringify(a.json) : (a.text ?? '');
      res.writeHead(a.status ?? 200, { 'content-type': a.json !== undefined ? 'application/json' : 'text/plain', ...a.headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
