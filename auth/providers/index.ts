// The providers postgate knows. `email` and `sms` are the code channels: they
// have no endpoints, but share the per-project switch and regional filter.
import { github } from './github.js';
import { google } from './google.js';
import { oidc } from './oidc.js';
import { passkey } from './passkey.js';
import { telegram } from './telegram.js';
import { vk } from './vk.js';
import { yandex } from './yandex.js';
import type { ProviderDef } from './types.js';

// magic_link is opt-in (provider set --methods otp,magic_link): it changes what users see.
const email: ProviderDef = { id: 'email', name: 'Email', methods: ['otp', 'magic_link'], defaultMethods: ['otp'], defaults: {}, requires: {} };
// SMS: api-url set = the HTTP sender (client secret = its bearer token); unset = the log sender.
const sms: ProviderDef = { id: 'sms', name: 'SMS', methods: ['otp'], defaults: {}, requires: {}, settings: ['apiUrl', 'clientSecret'] };

export const providers: ReadonlyMap<string, ProviderDef> = new Map([google, vk, yandex, github, telegram, oidc, email, sms, passkey].map((p) => [p.id, p]));

/** Providers on for every project until disabled (the rest need configuring). */
export const onByDefault = new Set(['email']);
