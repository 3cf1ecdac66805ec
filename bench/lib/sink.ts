// A receiving MX that only counts what it accepts (the test sink keeps every
// message, which a benchmark of many thousands does not need).
import { SMTPServer } from 'smtp-server';

export interface CountingSink {
  port: number;
  count(): number;
  close(): Promise<void>;
}

export async function startCountingSink(): Promise<CountingSink> {
  let received = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    size: 50 * 1024 * 1024,
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        received++;
        callback(null, 'queued');
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as { port: number };
  return { port, count: () => received, close: () => new Promise((r) => server.close(() => r())) };
}
