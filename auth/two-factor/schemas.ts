// JSON schemas of the two-factor routes (validation and /openapi.json).
import { userSchema } from '../schemas.js';

const s = { type: 'string' } as const;
const pendingToken = { ...s, minLength: 1, maxLength: 200, description: 'The pendingToken of the 401 TWO_FACTOR_REQUIRED answer' } as const;
const code = { ...s, minLength: 1, maxLength: 32, description: 'A 6-digit code of the authenticator app, or a backup code (xxxxx-xxxxx)' } as const;
const backupCodes = {
  type: 'array',
  items: s,
  description: 'Single-use backup codes: shown this once, keep them somewhere safe (each replaces a TOTP code once)',
} as const;
const setup = {
  type: 'object',
  required: ['secret', 'otpauthUri', 'qrCode'],
  properties: {
    secret: { ...s, description: 'base32, for typing into the app by hand' },
    otpauthUri: { ...s, description: 'otpauth://totp/… (SHA1, 6 digits, 30 s)' },
    qrCode: { ...s, description: 'The otpauth URI as a QR code: a data:image/svg+xml URL for an <img src>' },
  },
} as const;
const signedIn = {
  type: 'object',
  required: ['token', 'user'],
  properties: { token: { ...s, description: 'Session token (send as Authorization: Bearer)' }, user: userSchema },
} as const;
const success = { type: 'object', required: ['success'], properties: { success: { type: 'boolean' } } } as const;
const body = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', additionalProperties: false, required, properties: props });

export const schemas = {
  verify: {
    body: body(
      {
        pendingToken,
        code,
        method: { type: 'string', enum: ['totp', 'backup_code'], description: 'Default: 6 digits are a TOTP code, anything else a backup code' },
      },
      ['pendingToken', 'code'],
    ),
    response: { 200: signedIn },
  },
  enrol: { body: body({ pendingToken }, ['pendingToken']), response: { 200: setup } },
  enrolConfirm: {
    body: body({ pendingToken, code: { ...code, description: 'The first 6-digit code of the app just set up' } }, ['pendingToken', 'code']),
    response: { 200: { ...signedIn, required: ['token', 'user', 'backupCodes'], properties: { ...signedIn.properties, backupCodes } } },
  },
  status: {
    response: {
      200: {
        type: 'object',
        required: ['mode', 'totp', 'confirmedAt', 'backupCodesLeft'],
        properties: {
          mode: { type: 'string', enum: ['optional', 'required'], description: "The project's setting" },
          totp: { type: 'boolean', description: 'An authenticator app is on' },
          confirmedAt: { type: ['string', 'null'], format: 'date-time' },
          backupCodesLeft: { type: 'integer' },
        },
      },
    },
  },
  setup: { response: { 200: setup } },
  confirm: {
    body: body({ code: { ...code, description: 'The first 6-digit code of the app just set up' } }, ['code']),
    response: { 200: { type: 'object', required: ['backupCodes'], properties: { backupCodes } } },
  },
  backupCodes: { body: body({ code }, ['code']), response: { 200: { type: 'object', required: ['backupCodes'], properties: { backupCodes } } } },
  disable: { body: body({ code }, ['code']), response: { 200: success } },
};
