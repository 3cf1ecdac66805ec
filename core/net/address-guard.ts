// Which addresses an outbound request (a webhook) may reach. Refused by default:
// loopback, private (RFC 1918), CGNAT, link-local, unique-local, unspecified,
// multicast and reserved ranges, in every spelling that reaches them (IPv4-mapped,
// IPv4-compatible, NAT64 and 6to4 IPv6 forms). Operators may allow named CIDRs.
import net from 'node:net';

const V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
];
const V6: Array<[string, number]> = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const refused = new net.BlockList();
for (const [a, p] of V4) refused.addSubnet(a, p, 'ipv4');
for (const [a, p] of V6) refused.addSubnet(a, p, 'ipv6');

/** The 16 bytes of an IPv6 address (net.isIPv6 already true). */
/** The 16 bytes of an IPv6 address (a zone dropped, a dotted IPv4 tail read). */
export function v6Bytes(addr: string): number[] {
  let s = addr.split('%')[0]!;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    tail.push(...dotted[1]!.split('.').map(Number));
    s = `${s.slice(0, -dotted[1]!.length)}0:0`;
  }
  const [head, rest] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const groups = rest === undefined ? h : [...h, ...Array(8 - h.length - r.length).fill('0'), ...r];
  const bytes = groups.flatMap((g) => {
    const n = parseInt(g || '0', 16);
    return [n >> 8, n & 0xff];
  });
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** The IPv4 address an IPv6 address carries (compatible, mapped, NAT64, 6to4), if any. */
function embeddedV4(addr: string): string | undefined {
  const b = v6Bytes(addr);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (i: number) => b.slice(i, i + 4).join('.');
  if (zero(0, 10) && ((b[10] === 0 && b[11] === 0) || (b[10] === 0xff && b[11] === 0xff))) return v4(12); // ::a.b.c.d, ::ffff:a.b.c.d
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return v4(12); // 64:ff9b::/96 and 64:ff9b:1::/48
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2); // 6to4 2002:AABB:CCDD::
  return undefined;
}

export class AddressGuard {
  private readonly allowed = new net.BlockList();

  /** `allowCidrs`: operator exceptions such as "127.0.0.0/8" or "fd00::/8". Throws on a malformed entry. */
  constructor(allowCidrs: readonly string[] = []) {
    for (const cidr of allowCidrs) {
      const [addr, bits] = cidr.split('/');
      const type = net.isIPv4(addr ?? '') ? 'ipv4' : net.isIPv6(addr ?? '') ? 'ipv6' : undefined;
      const prefix = Number(bits ?? (type === 'ipv4' ? 32 : 128));
      if (!type || !Number.isInteger(prefix) || prefix < 0 || prefix > (type === 'ipv4' ? 32 : 128)) throw new Error(`not a CIDR: ${cidr}`);
      this.allowed.addSubnet(addr!, prefix, type);
    }
  }

  /** True when a request may connect to this IP address. */
  permits(ip: string): boolean {
    const type = net.isIPv4(ip) ? 'ipv4' : net.isIPv6(ip) ? 'ipv6' : undefined;
    if (!type) return false;
    if (this.allowed.check(ip, type)) return true;
    if (refused.check(ip, type)) return false;
    if (type === 'ipv6') {
      const v4 = embeddedV4(ip);
      if (v4 !== undefined) return this.permits(v4);
    }
    return true;
  }
}

/** A URL host as an IP literal (WHATWG already normalised decimal, hex and octal IPv4), or undefined for a name. */
export function hostIp(hostname: string): string | undefined {
  const h = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return net.isIP(h) ? h : undefined;
}
