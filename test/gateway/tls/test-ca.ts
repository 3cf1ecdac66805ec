// A certificate authority made in the test (openssl, EC keys: fast), and server certificates it signs
// for named hosts: what a real MX or MTA-STS policy host presents, verified against this CA only when
// the gateway is told to trust it (tls.caFile). (selfsigned 5.5 fails to sign with a CA key:
// "Cannot get schema for 'AlgorithmIdentifier'".)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCa {
  cert: string;
  key: string;
  /** A server certificate for these DNS names, signed by this CA. */
  issue(...names: string[]): Promise<{ cert: string; key: string }>;
}

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

export async function makeTestCa(name = 'postgate test CA'): Promise<TestCa> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-ca-'));
  openssl(dir, 'ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key');
  openssl(
    dir,
    'req',
    '-x509',
    '-new',
    '-key',
    'ca.key',
    '-sha256',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-out',
    'ca.pem',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  );
  let n = 0;
  return {
    cert: fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
    key: fs.readFileSync(path.join(dir, 'ca.key'), 'utf8'),
    async issue(...names) {
      const id = `leaf${++n}`;
      fs.writeFileSync(
        path.join(dir, `${id}.ext`),
        `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${names.map((d) => `DNS:${d}`).join(',')}\n`,
      );
      openssl(dir, 'ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${id}.key`);
      openssl(dir, 'req', '-new', '-key', `${id}.key`, '-subj', `/CN=${names[0]}`, '-out', `${id}.csr`);
      openssl(
        dir,
        'x509',
        '-req',
        '-in',
        `${id}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-sha256',
        '-extfile',
        `${id}.ext`,
        '-out',
        `${id}.pem`,
      );
      return { cert: fs.readFileSync(path.join(dir, `${id}.pem`), 'utf8'), key: fs.readFileSync(path.join(dir, `${id}.key`), 'utf8') };
    },
  };
}
