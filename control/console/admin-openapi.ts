// The admin listener's OpenAPI document: every admin route, including those marked `hide: true` (hidden
// from the public document, where they do not belong), with the admin token or the console's cookie as
// their security. Completed as the public document is (control/http/openapi.ts): operationIds, error
// answers, named schemas. deploy/admin-openapi.ts types the console's client from it.
import type { SwaggerOptions } from '@fastify/swagger';
import { completeOpenapi } from '../http/openapi.js';

/** The routes the document describes: the admin API and the console's sign-in (not /healthz, /metrics or the static files). */
const described = (url: string): boolean => (url.startsWith('/admin/') && url !== '/admin/v1/openapi.json') || url.startsWith('/console/api/');

const SECURITY = [{ adminToken: [] }, { consoleSession: [] }];

export function adminOpenapiOptions(): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'postgate admin',
        version: '1',
        description:
          "The operator's API on the admin listener (the CLI and the console). Errors are {error, code}. A console request that changes something carries X-CSRF-Token.",
        license: { name: 'MIT', identifier: 'MIT' },
      },
      components: {
        securitySchemes: {
          adminToken: { type: 'http', scheme: 'bearer', description: 'The admin token (POSTGATE_ADMIN_TOKEN)' },
          consoleSession: { type: 'apiKey', in: 'cookie', name: 'postgate_console', description: 'The console session (POST /console/api/session)' },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      if (!described(url)) return { schema, url };
      const s = { ...(schema as Record<string, unknown>), hide: false } as Record<string, unknown>;
      // The sign-in takes the token in its body; the session's own routes take the cookie; the rest either.
      if (url === '/console/api/session') {
        if (route.method !== 'POST') s.security = [{ consoleSession: [] }];
      } else s.security = SECURITY;
      return { schema: s as typeof schema, url };
    },
    transformObject: (document) => completeOpenapi(document),
  };
}
