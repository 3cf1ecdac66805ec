// Trusted networks of SMTP submission (config `smtpTrusted`, off by default): whether a
// client address lies in one of the configured CIDRs. An IPv4-mapped IPv6 address
// (::ffff:a.b.c.d, as a dual-stack listener reports IPv4 clients) counts as its IPv4 address.
import net from 'node:net';

export function trustedNetworks(cidrs: string[]): (ip: string | undefined) => boolean {
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [addr = '', bits] = cidr.split('/');
    const family = net.isIPv6(addr) ? 'ipv6' : 'ipv4';
    list.addSubnet(addr, bits === undefined ? (family === 'ipv6' ? 128 : 32) : Number(bits), family);
  }
  return (ip) => {
    if (!ip) return false;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
    const addr = mapped ?? ip;
    if (net.isIPv4(addr)) return list.check(addr, 'ipv4');
    return net.isIPv6(addr) && list.check(addr, 'ipv6');
  };
}
