// What the admin routes share: the slug a path names, a project as the admin API shows it, and
// the lookup that turns an unknown slug into a 404.
import { notFound } from '../../core/errors.js';
import type { Project, Store } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';

export const slugSchema = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;
export const slugParams = { type: 'object', required: ['slug'], properties: { slug: slugSchema } } as const;

export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const projectOut = (p: Project) => ({
  id: p.id,
  slug: p.slug,
  name: p.name,
  status: p.status,
  plan: p.plan,
  created_at: new Date(p.createdAt).toISOString(),
});
export const projectProperties = {
  id: { type: 'string' },
  slug: { type: 'string' },
  name: { type: 'string' },
  status: { type: 'string', enum: ['active', 'paused'] },
  plan: { type: 'string' },
  created_at: { type: 'string' },
} as const;
export const projectSchema = { type: 'object', required: Object.keys(projectProperties), properties: projectProperties } as const;

/** The answers every admin route may give besides its own (the guard's 401 and 429, bad input, unknown names). */
export const adminErrors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema } as const;

export async function projectBySlug(store: Store, slug: string): Promise<Project> {
  const p = await store.projects.bySlug(slug);
  if (!p) throw notFound(`No project ${slug}`);
  return p;
}

/** The slugs of the projects `ids` name (looked up together), for rows that carry a project id; `known` is not looked up again. */
export async function slugsOf(store: Store, ids: Iterable<string>, known?: Project): Promise<Map<string, string>> {
  const out = new Map<string, string>(known ? [[known.id, known.slug]] : []);
  const missing = [...new Set(ids)].filter((id) => !out.has(id));
  const found = await Promise.all(missing.map((id) => store.projects.byId(id)));
  for (const [i, id] of missing.entries()) out.set(id, found[i]?.slug ?? id);
  return out;
}

/** Query strings are not coerced (control/http/fastify.ts): a page size arrives as digits, 1 to 100. */
export const limitQuery = { type: 'string', pattern: '^(100|[1-9][0-9]?)$' } as const;
