// The receiving MX when Postfix's smtp-sink is not installed, or when the receiver must offer
// STARTTLS as real MXs do: `node --import tsx bench/lib/sink-process.ts <port> [--starttls]`
// accepts every message on 127.0.0.1:<port>, keeps none, and prints the count as smtp-sink -c
// does ("mesg=<n>"), at most every 20 ms. With --starttls it offers STARTTLS with smtp-server's
// built-in certificate.
import { SMTPServer } from 'smtp-server';

const port = Number(process.argv[2]);
const starttls = process.argv.includes('--starttls');
let received = 0;
let printed = -1;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: starttls ? ['AUTH'] : ['STARTTLS', 'AUTH'],
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
