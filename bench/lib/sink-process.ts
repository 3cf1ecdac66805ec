// The receiving MX when Postfix's smtp-sink is not installed: `node --import tsx
// bench/lib/sink-process.ts <port>` accepts every message on 127.0.0.1:<port>, keeps none, and
// prints the count as smtp-sink -c does ("mesg=<n>"), at most every 20 ms.
import { SMTPServer } from 'smtp-server';

const port = Number(process.argv[2]);
let received = 0;
let printed = -1;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  disableReverseLookup: true,
  logger: false,
  size: 50 * 1024 * 1024,
  maxClients: 4096,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => {
      received++;
      callback(null, 'queued');
    });
  },
});
server.on('error', () => {});
server.listen(port, '127.0.0.1');
setInterval(() => {
  if (received === printed) return;
  printed = received;
  process.stdout.write(`mesg=${received}\r`);
}, 20);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
