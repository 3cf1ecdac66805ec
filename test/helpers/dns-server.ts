// An authoritative DNS server on 127.0.0.1 (UDP, free port) for tests: point
// POSTGATE_DNS_SERVERS at `address`. Unknown names are NXDOMAIN; a known name
// without records of the asked type is NODATA. Records can be added while it runs.
import dgram from 'node:dgram';
import packet from 'dns-packet';

export type DnsRecord =
  | { type: 'MX'; name: string; exchange: string; priority?: number }
  | { type: 'A'; name: string; address: string }
  | { type: 'TXT'; name: string; value: string }
  | { type: 'CNAME'; name: string; target: string };

export interface DnsServer {
  port: number;
  /** "127.0.0.1:port", for POSTGATE_DNS_SERVERS. */
  address: string;
  add(...records: DnsRecord[]): void;
  /** Removes every record of a name (and type, when given). */
  remove(name: string, type?: DnsRecord['type']): void;
  close(): Promise<void>;
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, '');
const TTL = 5;
const NXDOMAIN = 3;

/** TXT character-strings hold at most 255 bytes: longer values (DKIM keys) are split. */
function txtChunks(value: string): Buffer[] {
  const buf = Buffer.from(value, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += 255) chunks.push(buf.subarray(i, i + 255));
  return chunks.length ? chunks : [Buffer.alloc(0)];
}

function toAnswer(r: DnsRecord): packet.Answer {
  const name = norm(r.name);
  switch (r.type) {
    case 'MX':
      return { type: 'MX', name, ttl: TTL, data: { preference: r.priority ?? 10, exchange: norm(r.exchange) } };
    case 'A':
      return { type: 'A', name, ttl: TTL, data: r.address };
    case 'TXT':
      return { type: 'TXT', name, ttl: TTL, data: txtChunks(r.value) };
    case 'CNAME':
      return { type: 'CNAME', name, ttl: TTL, data: norm(r.target) };
  }
}

export async function startDnsServer(initial: DnsRecord[] = []): Promise<DnsServer> {
  let records: DnsRecord[] = [...initial];

  function answer(qname: string, qtype: string, depth = 0): { answers: packet.Answer[]; known: boolean } {
    const own = records.filter((r) => norm(r.name) === qname);
    if (!own.length) return { answers: [], known: false };
    const cname = own.find((r) => r.type === 'CNAME');
    if (cname && qtype !== 'CNAME' && depth < 8) {
      // Follow the alias inside our zone, as an authoritative server does.
      const next = answer(norm((cname as { target: string }).target), qtype, depth + 1);
      return { answers: [toAnswer(cname), ...next.answers], known: true };
    }
    return { answers: own.filter((r) => r.type === qtype).map(toAnswer), known: true };
  }

  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    let query: packet.Packet;
    try {
      query = packet.decode(msg);
    } catch {
      return;
    }
    const q = query.questions?.[0];
    if (!q) return;
    const { answers, known } = answer(norm(q.name), q.type);
    const response = packet.encode({
      id: query.id,
      type: 'response',
      flags: packet.AUTHORITATIVE_ANSWER | (known ? 0 : NXDOMAIN),
      questions: [q],
      answers,
    });
    socket.send(response, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const { port } = socket.address();

  return {
    port,
    address: `127.0.0.1:${port}`,
    add: (...more) => {
      records.push(...more);
    },
    remove: (name, type) => {
      records = records.filter((r) => !(norm(r.name) === norm(name) && (!type || r.type === type)));
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
