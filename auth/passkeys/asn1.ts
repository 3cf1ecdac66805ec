// A guard for how npm laid out @simplewebauthn/server's ASN.1 dependencies. The library parses an ES256
// signature with its copy of @peculiar/asn1-schema and the ECDSASigValue class of @peculiar/asn1-ecc, whose
// schema is registered on asn1-ecc's copy. When the two copies differ (npm nests one per dependent when
// another package pins an older asn1-schema at the top: mailauth's @postalsys/vmc does), every ES256
// assertion fails with "Cannot get schema for 'ECDSASigValue' target" (SimpleWebAuthn issues #738, #808).
// This declares ECDSASigValue's two fields on the library's own copy too, with that copy's public
// decorator, exactly as asn1-ecc declares them; with one shared copy (deduplicated install) it does nothing.
import { createRequire } from 'node:module';

interface SchemaLib {
  AsnParser: { parse(data: Uint8Array, target: unknown): unknown };
  AsnProp(o: { type: unknown; converter: unknown }): (target: object, key: string) => void;
  AsnPropTypes: { Integer: unknown };
  AsnIntegerArrayBufferConverter: unknown;
}

/** A DER ECDSA signature (r = s = 1): parsing it tells whether the library's copy knows the schema. */
const PROBE = new Uint8Array([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]);

let done = false;

export function alignAsn1Schemas(): void {
  if (done) return;
  done = true;
  const fromServer = createRequire(createRequire(import.meta.url).resolve('@simplewebauthn/server'));
  const schema = fromServer('@peculiar/asn1-schema') as SchemaLib;
  const { ECDSASigValue } = fromServer('@peculiar/asn1-ecc') as { ECDSASigValue: { prototype: object } };
  try {
    schema.AsnParser.parse(PROBE, ECDSASigValue);
    return;
  } catch {
    /* not registered on this copy: declared below */
  }
  for (const field of ['r', 's']) {
    schema.AsnProp({ type: schema.AsnPropTypes.Integer, converter: schema.AsnIntegerArrayBufferConverter })(ECDSASigValue.prototype, field);
  }
}
