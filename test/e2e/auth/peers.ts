// Real peers on loopback for the auth tests: oidc-provider as an OpenID
// provider (real authorization code + PKCE flow, real id_tokens and JWKS), and
// small HTTP servers answering as VK ID, Yandex ID and GitHub document, plus
// an SMS gateway. Only free ports.
import http from 'node:http';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface Peer {
  url: string;
  close(): Promise<void>;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const closer = (server: http.Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const s256 = (verifier: string) => crypto.createHash('sha256').update(verifier).digest('base64url');

// ---------------------------------------------------------------- OpenID provider

export interface Account {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  picture?: string;
  hd?: string;
}

export interface OidcClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  token_endpoint_auth_method?: string;
}

export interface OpenIdProvider extends Peer {
  issuer: string;
  /** The account the next interactive login signs in. */
  loginAs(account: Account): void;
  /** A real id_token for `clientId` through the code + PKCE flow, as a client SDK would get it. */
  idToken(clientId: string, account: Account, nonce?: string): Promise<string>;
}

export async function startOpenIdProvider(clients: OidcClient[]): Promise<OpenIdProvider> {
  const server = http.createServer();
  const issuer = await listen(server);
  const accounts = new Map<string, Account>();
  let next: Account | undefined;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  // A client of our own, to mint id_tokens for other audiences the way an SDK would.
  const sdkRedirect = `${issuer}/sdk-callback`;
  const sdkClients = new Map<string, OidcClient>();
  const allClients = [...clients];
  for (const c of clients) {
    sdkClients.set(c.client_id, c);
    if (!c.redirect_uris.includes(sdkRedirect)) c.redirect_uris.push(sdkRedirect);
  }
  const provider = new Provider(issuer, {
    clients: allClients.map((c) => ({
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      ...c,
    })),
    jwks: { keys: [jwk] },
    cookies: { keys: ['peer-cookie-key'] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Session: 3600, Grant: 3600 },
    // Like Google: the profile claims are in the id_token itself.
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], email: ['email', 'email_verified', 'hd'], profile: ['name', 'picture'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, id: string) => {
      const a = accounts.get(id);
      return a ? { accountId: id, claims: async () => ({ ...a }) } : undefined;
    },
    async renderError(ctx: any, out: unknown) {
      ctx.type = 'json';
      ctx.body = out;
    },
  });
  const handler = provider.callback();
  server.on('request', (req, res) => {
    // The automatic login: finish each interaction (login, then consent) without a form.
    if (req.url?.startsWith('/interaction/')) {
      void (async () => {
        try {
          const details = await provider.interactionDetails(req, res);
          if (details.prompt.name === 'login') {
            const account = next ?? accounts.values().next().value;
            if (!account) throw new Error('no account to log in');
            accounts.set(account.sub, account);
            await provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
            return;
          }
          const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
          const d = details.prompt.details;
          if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
          if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
          for (const [r, scopes] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(r, (scopes as string[]).join(' '));
          await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
        } catch (err) {
          json(res, 500, { error: String(err) });
        }
      })();
      return;
    }
    handler(req, res);
  });

  const op: OpenIdProvider = {
    url: issuer,
    issuer,
    close: closer(server),
    loginAs(account) {
      accounts.set(account.sub, account);
      next = account;
    },
    async idToken(clientId, account, nonce) {
      const client = sdkClients.get(clientId);
      if (!client) throw new Error(`no client ${clientId}`);
      op.loginAs(account);
      const verifier = crypto.randomBytes(32).toString('base64url');
      const auth = new URL(`${issuer}/auth`);
      auth.search = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: sdkRedirect,
        scope: 'openid email profile',
        state: 'sdk',
        code_challenge: s256(verifier),
        code_challenge_method: 'S256',
        ...(nonce ? { nonce } : {}),
      }).toString();
      const landed = await browse(auth.toString(), (u) => u.startsWith(sdkRedirect));
      const code = new URL(landed).searchParams.get('code');
      if (!code) throw new Error(`no code: ${landed}`);
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${client.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: sdkRedirect, code_verifier: verifier }),
      });
      const body = (await res.json()) as { id_token?: string };
      if (!body.id_token) throw new Error(`no id_token: ${JSON.stringify(body)}`);
      return body.id_token;
    },
  };
  return op;
}

/**
 * A browser in miniature: follows redirects by hand with a cookie jar until a
 * Location satisfies `stop`, and returns that Location. `rewrite` maps
 * addresses (postgate's base URL names localhost; the stack listens on 127.0.0.1).
 */
export async function browse(
  start: string,
  stop: (url: string) => boolean,
  rewrite: (url: string) => string = (u) => u,
  jar = new Map<string, string>(),
): Promise<string> {
  let url = start;
  for (let hop = 0; hop < 20; hop++) {
    if (stop(url)) return url;
    const res = await fetch(rewrite(url), {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '), 'user-agent': 'TestBrowser/1.0' },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    const location = res.headers.get('location');
    if (!location) throw new Error(`no redirect from ${url}: ${res.status} ${await res.text()}`);
    url = new URL(location, rewrite(url)).toString();
  }
  throw new Error('too many redirects');
}

// ---------------------------------------------------------------- plain OAuth providers

interface PendingCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  deviceId?: string;
  user: string;
}

/** Issues codes at /authorize the way these providers do (PKCE S256 recorded, code bound to client and redirect_uri). */
function authorizeHandler(codes: Map<string, PendingCode>, currentUser: () => string, extra: Record<string, string> = {}, withDevice = false) {
  return (url: URL, res: http.ServerResponse) => {
    const q = url.searchParams;
    if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
      return json(res, 400, { error: 'invalid_request', error_description: 'PKCE S256 required' });
    const redirect = new URL(q.get('redirect_uri')!);
    if (q.get('deny')) {
      redirect.searchParams.set('error', 'access_denied');
    } else {
      const code = crypto.randomBytes(16).toString('hex');
      const deviceId = crypto.randomUUID();
      codes.set(code, {
        clientId: q.get('client_id')!,
        redirectUri: q.get('redirect_uri')!,
        challenge: q.get('code_challenge')!,
        deviceId,
        user: currentUser(),
      });
      redirect.searchParams.set('code', code);
      for (const [k, v] of Object.entries(extra)) redirect.searchParams.set(k, v);
      if (withDevice) redirect.searchParams.set('device_id', deviceId);
    }
    redirect.searchParams.set('state', q.get('state')!);
    res.writeHead(302, { location: redirect.toString() });
    res.end();
  };
}

function checkCode(codes: Map<string, PendingCode>, form: URLSearchParams, needDevice = false): PendingCode | string {
  const c = codes.get(form.get('code') ?? '');
  if (!c) return 'unknown code';
  codes.delete(form.get('code')!);
  if (c.clientId !== form.get('client_id')) return 'client_id mismatch';
  if (c.redirectUri !== form.get('redirect_uri') && form.get('redirect_uri') !== null) return 'redirect_uri mismatch';
  if (s256(form.get('code_verifier') ?? '') !== c.challenge) return 'PKCE verifier mismatch';
  if (needDevice && form.get('device_id') !== c.deviceId) return 'device_id mismatch';
  return c;
}

export interface VkUser {
  user_id: string;
  first_name: string;
  last_name: string;
  email?: string;
  phone?: string;
  avatar?: string;
}

export interface VkPeer extends Peer {
  users: Map<string, VkUser>;
  current: string;
  /** Silent tokens the legacy SDK would hand out: token → {uuid, user}. */
  silent: Map<string, { uuid: string; user: string }>;
  serviceToken: string;
}

/** VK ID: id.vk.com/authorize, /oauth2/auth (with device_id), /oauth2/user_info; api.vk.com/method/… */
export async function startVk(clientId: string): Promise<VkPeer> {
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, string>();
  const server = http.createServer();
  const peer: VkPeer = { url: '', close: closer(server), users: new Map(), current: '', silent: new Map(), serviceToken: 'vk-service-token' };
  const authorize = authorizeHandler(codes, () => peer.current, { type: 'code_v2', expires_in: '600' }, true);
  server.on('request', async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const form = new URLSearchParams(await readBody(req));
    if (url.pathname === '/authorize') return authorize(url, res);
    if (url.pathname === '/oauth2/auth' && req.method === 'POST') {
      if (form.get('grant_type') !== 'authorization_code') return json(res, 400, { error: 'unsupported_grant_type' });
      const c = checkCode(codes, form, true);
      if (typeof c === 'string') return json(res, 400, { error: 'invalid_grant', error_description: c, state: form.get('state') });
      if (form.get('client_id') !== clientId) return json(res, 400, { error: 'invalid_client' });
      const access = `vk1.a.${crypto.randomBytes(16).toString('hex')}`;
      tokens.set(access, c.user);
      return json(res, 200, {
        refresh_token: 'vk2.a.refresh',
        access_token: access,
        id_token: 'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJWSyJ9.c2ln',
        token_type: 'Bearer',
        expires_in: 3600,
        user_id: Number(c.user),
        state: form.get('state'),
        scope: 'vkid.personal_info email',
      });
    }
    if (url.pathname === '/oauth2/user_info' && req.method === 'POST') {
      const user = tokens.get(form.get('access_token') ?? '');
      if (!user || form.get('client_id') !== clientId)
        return json(res, 401, { error: 'invalid_token', error_description: 'access_token is missing or invalid' });
      const u = peer.users.get(user)!;
      return json(res, 200, { user: { ...u, sex: 2, verified: false, birthday: '01.01.1990' } });
    }
    if (url.pathname === '/method/auth.exchangeSilentAuthToken') {
      const s = peer.silent.get(form.get('token') ?? '');
      if (form.get('access_token') !== peer.serviceToken)
        return json(res, 200, { error: { error_code: 5, error_msg: 'User authorization failed: invalid access_token' } });
      if (!s || s.uuid !== form.get('uuid')) return json(res, 200, { error: { error_code: 104, error_msg: 'Not found' } });
      peer.silent.delete(form.get('token')!);
      const access = `vk1.a.${crypto.randomBytes(16).toString('hex')}`;
      tokens.set(access, s.user);
      const u = peer.users.get(s.user)!;
      return json(res, 200, {
        response: {
          access_token: access,
          access_token_id: '1',
          user_id: Number(s.user),
          phone: u.phone ?? '',
          phone_validated: 1,
          is_partial: false,
          is_service: false,
          email: u.email ?? '',
          source: 1,
          source_description: 'silent',
        },
      });
    }
    if (url.pathname === '/method/users.get') {
      const user = tokens.get(form.get('access_token') ?? '');
      if (!user) return json(res, 200, { error: { error_code: 5, error_msg: 'User authorization failed' } });
      const u = peer.users.get(user)!;
      return json(res, 200, {
        response: [
          {
            id: Number(user),
            first_name: u.first_name,
            last_name: u.last_name,
            photo_200: u.avatar,
            screen_name: `id${user}`,
            can_access_closed: true,
            is_closed: false,
          },
        ],
      });
    }
    json(res, 404, { error: 'not found' });
  });
  peer.url = await listen(server);
  return peer;
}

export interface YandexUser {
  id: string;
  login: string;
  real_name: string;
  default_email?: string;
  default_phone?: string;
}

export interface YandexPeer extends Peer {
  users: Map<string, YandexUser>;
  current: string;
  /** An implicit-flow ("instant") token issued to `clientId` for `user`. */
  instantToken(clientId: string, user: string): string;
  /** Requests to /info that carried the token in the URL (must stay 0). */
  tokenInUrl: number;
}

/** Yandex ID: oauth.yandex.ru/authorize and /token, login.yandex.ru/info with `Authorization: OAuth`. */
export async function startYandex(clientId: string, clientSecret: string): Promise<YandexPeer> {
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, { user: string; clientId: string }>();
  const server = http.createServer();
  const peer: YandexPeer = {
    url: '',
    close: closer(server),
    users: new Map(),
    current: '',
    tokenInUrl: 0,
    instantToken(cid, user) {
      const t = `y0_${crypto.randomBytes(16).toString('hex')}`;
      tokens.set(t, { user, clientId: cid });
      return t;
    },
  };
  const authorize = authorizeHandler(codes, () => peer.current, { cid: 'abc123' });
  server.on('request', async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const form = new URLSearchParams(await readBody(req));
    if (url.pathname === '/authorize') return authorize(url, res);
    if (url.pathname === '/token' && req.method === 'POST') {
      if (form.get('client_secret') !== clientSecret) return json(res, 400, { error: 'invalid_client', error_description: 'Client not found' });
      const c = checkCode(codes, form);
      if (typeof c === 'string') return json(res, 400, { error: 'invalid_grant', error_description: c });
      return json(res, 200, { token_type: 'bearer', access_token: peer.instantToken(clientId, c.user), expires_in: 31536000, refresh_token: '1:refresh' });
    }
    if (url.pathname === '/info') {
      if (url.searchParams.has('oauth_token')) peer.tokenInUrl++;
      const m = /^OAuth (.+)$/.exec(req.headers.authorization ?? '');
      const t = m ? tokens.get(m[1]!) : undefined;
      if (!t) return json(res, 401, { error: 'invalid_token' });
      const u = peer.users.get(t.user)!;
      const [first, last] = u.real_name.split(' ');
      return json(res, 200, {
        id: u.id,
        login: u.login,
        client_id: t.clientId,
        display_name: u.login,
        real_name: u.real_name,
        first_name: first,
        last_name: last,
        sex: 'male',
        default_email: u.default_email,
        emails: u.default_email ? [u.default_email] : [],
        default_avatar_id: '131652443',
        is_avatar_empty: false,
        ...(u.default_phone ? { default_phone: { id: 12345678, number: u.default_phone } } : {}),
        psuid: '1.AAceCw.tbHgw5DtJ9_zeqPrk-Ba2w.qPWSRC5v2t2IaksPJgnge',
      });
    }
    json(res, 404, { error: 'not found' });
  });
  peer.url = await listen(server);
  return peer;
}

export interface GitHubUser {
  id: number;
  login: string;
  name: string;
  emails: Array<{ email: string; primary: boolean; verified: boolean; visibility: string | null }>;
}

export interface GitHubPeer extends Peer {
  users: Map<string, GitHubUser>;
  current: string;
}

/** GitHub: /login/oauth/authorize and /access_token (errors as 200 JSON), /user and /user/emails. */
export async function startGitHub(clientId: string, clientSecret: string): Promise<GitHubPeer> {
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, string>();
  const server = http.createServer();
  const peer: GitHubPeer = { url: '', close: closer(server), users: new Map(), current: '' };
  const authorize = authorizeHandler(codes, () => peer.current);
  server.on('request', async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const form = new URLSearchParams(await readBody(req));
    if (url.pathname === '/login/oauth/authorize') return authorize(url, res);
    if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
      // GitHub answers errors with 200 and an error body.
      if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
        return json(res, 200, { error: 'incorrect_client_credentials', error_description: 'The client_id and/or client_secret passed are incorrect.' });
      const c = checkCode(codes, form);
      if (typeof c === 'string') return json(res, 200, { error: 'bad_verification_code', error_description: c });
      const t = `gho_${crypto.randomBytes(16).toString('hex')}`;
      tokens.set(t, c.user);
      return json(res, 200, { access_token: t, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const m = /^(?:Bearer|token) (.+)$/.exec(req.headers.authorization ?? '');
    const user = m ? tokens.get(m[1]!) : undefined;
    if (!req.headers['user-agent'])
      return json(res, 403, { message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header' });
    if ((url.pathname === '/user' || url.pathname === '/user/emails') && !user) return json(res, 401, { message: 'Bad credentials' });
    const u = user ? peer.users.get(user)! : undefined;
    if (url.pathname === '/user')
      return json(res, 200, {
        login: u!.login,
        id: u!.id,
        avatar_url: `https://avatars.githubusercontent.com/u/${u!.id}?v=4`,
        name: u!.name,
        email: null,
        type: 'User',
      });
    if (url.pathname === '/user/emails') return json(res, 200, u!.emails);
    json(res, 404, { message: 'Not Found' });
  });
  peer.url = await listen(server);
  return peer;
}

// ---------------------------------------------------------------- SMS gateway

export interface SmsGateway extends Peer {
  messages: Array<{ to: string; text: string; auth: string | undefined }>;
}

export async function startSmsGateway(): Promise<SmsGateway> {
  const server = http.createServer();
  const peer: SmsGateway = { url: '', close: closer(server), messages: [] };
  server.on('request', async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { to: string; text: string };
    peer.messages.push({ ...body, auth: req.headers.authorization });
    json(res, 200, { id: String(peer.messages.length), status: 'accepted' });
  });
  peer.url = await listen(server);
  return peer;
}
