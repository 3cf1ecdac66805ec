// JSON schemas of the passkey routes (tags ['auth']). The ceremonies' JSON is WebAuthn's own
// (PublicKeyCredential*OptionsJSON out, RegistrationResponseJSON / AuthenticationResponseJSON in): its
// cryptographic fields are checked by @simplewebauthn/server, so these only bound their sizes.
import { codeChallenge } from '../schemas.js';

const s = { type: 'string' } as const;
const b64 = (max: number) => ({ type: 'string', maxLength: max, pattern: '^[A-Za-z0-9_-]*={0,2}$' }) as const;

export const rpId = {
  ...s,
  minLength: 1,
  maxLength: 253,
  description: "The RP ID: default the origin's host; may be a registrable parent domain of it (acme.com for app.acme.com)",
} as const;
export const originField = {
  ...s,
  maxLength: 300,
  description:
    "The page's origin, for a server calling on a browser's behalf (a browser's Origin header wins; they must agree). One of the project's allowed origins",
} as const;

const credential = (kind: 'registration' | 'authentication') => ({
  type: 'object',
  required: ['id', 'rawId', 'type', 'response'],
  description: `The ${kind} response as the browser gives it in JSON (PublicKeyCredential.toJSON(), or @simplewebauthn/browser)`,
  properties: {
    id: b64(1366),
    rawId: b64(1366),
    type: { type: 'string', enum: ['public-key'] },
    authenticatorAttachment: { type: ['string', 'null'], maxLength: 32 },
    clientExtensionResults: { type: 'object' },
    response: {
      type: 'object',
      required: kind === 'registration' ? ['clientDataJSON', 'attestationObject'] : ['clientDataJSON', 'authenticatorData', 'signature'],
      properties: {
        clientDataJSON: b64(4096),
        ...(kind === 'registration'
          ? {
              attestationObject: b64(65536),
              authenticatorData: b64(65536),
              publicKey: b64(4096),
              publicKeyAlgorithm: { type: 'integer' },
              transports: { type: 'array', maxItems: 8, items: { ...s, maxLength: 32 } },
            }
          : { authenticatorData: b64(65536), signature: b64(4096), userHandle: { ...b64(256), type: ['string', 'null'] } }),
      },
    },
  },
});
export const registrationResponse = credential('registration');
export const authenticationResponse = credential('authentication');

/** The options as WebAuthn's JSON: pass them to navigator.credentials (parse…FromJSON) or @simplewebauthn/browser. */
const options = (what: string) => ({
  type: 'object',
  required: ['challenge'],
  additionalProperties: true,
  description: `${what} (WebAuthn's JSON form); the challenge is single use and valid 5 minutes`,
  properties: { challenge: s, rpId: s, timeout: { type: 'integer' } },
});

export const passkeyView = {
  type: 'object',
  required: ['id', 'name', 'createdAt', 'lastUsedAt', 'deviceType', 'backedUp', 'transports'],
  properties: {
    id: { ...s, format: 'uuid' },
    name: s,
    createdAt: { ...s, format: 'date-time' },
    lastUsedAt: { type: ['string', 'null'], format: 'date-time' },
    deviceType: { type: 'string', enum: ['singleDevice', 'multiDevice'], description: 'multiDevice: a synced passkey (backup eligible)' },
    backedUp: { type: 'boolean' },
    transports: { type: 'array', items: s },
  },
} as const;

const name = { ...s, maxLength: 64, description: 'A label the user recognises ("MacBook"); default from the authenticator kind' } as const;

export const passkeySchemas = {
  registerOptions: {
    body: { type: 'object', additionalProperties: false, properties: { rpId, origin: originField } },
    response: { 200: options('PublicKeyCredentialCreationOptions: give them to navigator.credentials.create') },
  },
  registerVerify: {
    body: { type: 'object', additionalProperties: false, required: ['response'], properties: { response: registrationResponse, name, origin: originField } },
    response: { 200: passkeyView },
  },
  list: {
    response: { 200: { type: 'object', required: ['passkeys'], properties: { passkeys: { type: 'array', items: passkeyView } } } },
  },
  remove: {
    params: { type: 'object', required: ['id'], properties: { id: { ...s, maxLength: 64 } } },
    response: { 200: { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } } },
  },
  signInOptions: {
    body: { type: 'object', additionalProperties: false, properties: { rpId, origin: originField } },
    response: { 200: options('PublicKeyCredentialRequestOptions (no allowCredentials: discoverable passkeys): give them to navigator.credentials.get') },
  },
  signInVerify: {
    body: { type: 'object', additionalProperties: false, required: ['response'], properties: { response: authenticationResponse, origin: originField } },
  },
  hostedOptions: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['slug'],
      properties: {
        slug: { ...s, minLength: 1, maxLength: 64, description: 'The project slug' },
        rpId,
        redirectUri: { ...s, minLength: 1, maxLength: 2048, description: "Checked when given: the app's callback address the sign-in will end on" },
      },
    },
    response: { 200: options('PublicKeyCredentialRequestOptions for the widget') },
  },
  hostedVerify: {
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['slug', 'response', 'redirectUri'],
      properties: {
        slug: { ...s, minLength: 1, maxLength: 64 },
        response: authenticationResponse,
        redirectUri: { ...s, minLength: 1, maxLength: 2048, description: "The app's callback address; its origin must be allowed for the project" },
        codeChallenge,
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['redirectUrl'],
        properties: { redirectUrl: { ...s, description: 'redirectUri with a single-use svc_code: send the top window there; the app exchanges the code' } },
      },
    },
  },
};
