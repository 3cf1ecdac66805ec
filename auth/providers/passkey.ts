// Passkeys (WebAuthn, auth/passkeys): a provider only for its per-project switch (off until
// `postgate provider set --provider passkey`) and regional filter; it has no endpoints and needs no secrets.
import type { ProviderDef } from './types.js';

export const passkey: ProviderDef = { id: 'passkey', name: 'Passkey', methods: ['webauthn'], defaults: {}, requires: {} };
