// A send naming a template becomes the request it renders to, on a real (SQLite) store: the
// published version, not the draft; the request's from/subject/reply_to over the template's; the
// project's own templates only; and the refusals, as 422 TEMPLATE_INVALID.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TemplateRenderer } from '../../../control/templates/apply.js';
import type { TemplateContent, TemplateRow } from '../../../control/store/index.js';
import { ApiError } from '../../../core/errors.js';
import { uuidv7 } from '../../../core/ids.js';
import { type UnitStore, unitStore } from '../../helpers/unit-store.js';

let u: UnitStore;
let renderer: TemplateRenderer;
const now = Date.now();
const limits = { maxBodyBytes: 1000, maxSubjectLength: 50 };

const content = (o: Partial<TemplateContent> = {}): TemplateContent => ({
  versionId: uuidv7(),
  from: 'Acme <hello@acme.test>',
  subject: 'Hi {{{NAME}}}',
  replyTo: ['help@acme.test'],
  html: '<p>{{NAME}} {{{RAW}}}</p>',
  text: 'Hi {{NAME}}',
  variables: [
    { key: 'NAME', type: 'string', fallback: null, createdAt: now, updatedAt: now },
    { key: 'RAW', type: 'string', fallback: '<i>r</i>', createdAt: now, updatedAt: now },
  ],
  ...o,
});
const row = (o: Partial<TemplateRow> = {}): TemplateRow => ({
  id: uuidv7(),
  projectId: u.project.id,
  name: 'T',
  alias: null,
  draft: content(),
  published: null,
  publishedAt: null,
  createdAt: now,
  updatedAt: now,
  ...o,
});
const refusal = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, status: err.status, message: err.message };
    throw err;
  }
  throw new Error('not refused');
};

beforeAll(async () => {
  u = await unitStore();
  renderer = new TemplateRenderer(u.store, limits);
  const published = content();
  await u.store.templates.create(row({ alias: 'welcome', draft: content({ html: '<p>draft {{{NAME}}}</p>' }), published, publishedAt: now }));
  await u.store.templates.create(row({ alias: 'unpublished' }));
  await u.store.templates.create(row({ alias: 'bare', published: content({ from: null, subject: null, replyTo: null, text: null }), publishedAt: now }));
  await u.store.templates.create(row({ alias: 'repeat', published: content({ html: '{{{NAME}}}'.repeat(20), subject: 'Fixed' }), publishedAt: now }));
});
afterAll(async () => {
  await u.close();
});

describe('TemplateRenderer.apply', () => {
  it('passes a request without a template through as it is', async () => {
    const req = { from: 'a@acme.test', to: 'b@x.test', subject: 's', text: 't' };
    expect(await renderer.apply(u.project.id, req)).toBe(req);
  });

  it('renders the published version (not the draft) with the template from, subject and reply_to', async () => {
    const out = await renderer.apply(u.project.id, { to: 'b@x.test', tags: ['t'], template: { id: 'welcome', variables: { NAME: 'A&B' } } });
    expect(out).toEqual({
      to: 'b@x.test',
      tags: ['t'],
      from: 'Acme <hello@acme.test>',
      subject: 'Hi A&B',
      reply_to: ['help@acme.test'],
      html: '<p>A&#38;B <i>r</i></p>',
      text: 'Hi A&B',
    });
  });

  it("keeps the request's own from, subject and reply_to", async () => {
    const out = await renderer.apply(u.project.id, {
      from: 'x@acme.test',
      subject: 'Mine',
      reply_to: 'r@acme.test',
      to: 'b@x.test',
      template: { id: 'welcome', variables: { NAME: 'n' } },
    });
    expect(out).toMatchObject({ from: 'x@acme.test', subject: 'Mine', reply_to: 'r@acme.test' });
  });

  it('refuses: unknown, unpublished, another project, missing from or subject, html beside a template', async () => {
    const other = await u.another('other');
    expect(await refusal(renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'nope' } }))).toMatchObject({ code: 'TEMPLATE_INVALID', status: 422 });
    expect((await refusal(renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'unpublished', variables: { NAME: 'n' } } }))).message).toMatch(
      /is not published/,
    );
    expect(await refusal(renderer.apply(other.id, { to: 'b@x.test', template: { id: 'welcome', variables: { NAME: 'n' } } }))).toMatchObject({
      code: 'TEMPLATE_INVALID',
      message: 'template "welcome" not found',
    });
    expect((await refusal(renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'bare', variables: { NAME: 'n' } } }))).message).toMatch(
      /from is missing/,
    );
    expect(
      (await refusal(renderer.apply(u.project.id, { from: 'a@acme.test', to: 'b@x.test', template: { id: 'bare', variables: { NAME: 'n' } } }))).message,
    ).toMatch(/subject is missing/);
    expect(await refusal(renderer.apply(u.project.id, { html: '<p/>', to: 'b@x.test', template: { id: 'welcome' } }))).toMatchObject({
      code: 'INVALID_REQUEST',
    });
  });

  it('bounds the rendered parts: a place repeated with a long value, a subject past its limit; a CR/LF in the subject is a space', async () => {
    const long = await refusal(renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'welcome', variables: { NAME: 'x'.repeat(60) } } }));
    expect(long.message).toMatch(/rendered subject is longer than 50/);
    const html = await refusal(renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'repeat', variables: { NAME: 'x'.repeat(51) } } }));
    expect(html.message).toMatch(/rendered html is longer than 1000/);
    const out = await renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'welcome', variables: { NAME: 'a\r\nBcc: z@evil.test' } } });
    expect(out.subject).toBe('Hi a Bcc: z@evil.test');
  });

  it('sees a new publish at once (the store cache is dropped on change)', async () => {
    const t = (await u.store.templates.get(u.project.id, 'welcome'))!;
    await u.store.templates.update({ ...t, draft: content({ html: '<p>v2 {{NAME}}</p>' }) });
    const before = await renderer.apply(u.project.id, { to: 'b@x.test', template: { id: 'welcome', variables: { NAME: 'n' } } });
    expect(before.html).toBe('<p>n <i>r</i></p>');
    await u.store.templates.publish(u.project.id, t.id, Date.now());
    const after = await renderer.apply(u.project.id, { to: 'b@x.test', template: { id: t.id, variables: { NAME: 'n' } } });
    expect(after.html).toBe('<p>v2 n</p>');
  });
});
