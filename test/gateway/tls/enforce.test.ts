import type tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { verifyReason } from '../../../gateway/tls/enforce.js';

describe('why a certificate does not verify, in words', () => {
  it('names the host names a certificate is for when it is not the MX', () => {
    const cert = { subjectaltname: 'DNS:mx.other.test, DNS:alt.other.test', subject: { CN: 'mx.other.test' } } as unknown as tls.PeerCertificate;
    expect(verifyReason('mx.example.test', 'ERR_TLS_CERT_ALTNAME_INVALID', cert)).toBe('it names mx.other.test, alt.other.test, not mx.example.test');
    const cnOnly = { subject: { CN: 'legacy.test' } } as unknown as tls.PeerCertificate;
    expect(verifyReason('mx.example.test', 'ERR_TLS_CERT_ALTNAME_INVALID', cnOnly)).toBe('it names CN=legacy.test, not mx.example.test');
  });
  it("says OpenSSL's codes in words, with the code", () => {
    expect(verifyReason('mx', 'DEPTH_ZERO_SELF_SIGNED_CERT', undefined)).toBe('it is self-signed (DEPTH_ZERO_SELF_SIGNED_CERT)');
    expect(verifyReason('mx', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', undefined)).toBe(
      'it is issued by an authority that is not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    );
    expect(verifyReason('mx', 'CERT_HAS_EXPIRED', undefined)).toBe('it has expired (CERT_HAS_EXPIRED)');
    expect(verifyReason('mx', Object.assign(new Error('x'), { code: 'SOMETHING_NEW' }), undefined)).toBe('it is not valid (SOMETHING_NEW)');
  });
});
