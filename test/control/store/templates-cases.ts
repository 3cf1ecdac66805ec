// Conformance cases of store.templates (control/templates), run by describeStore (conformance.ts) on
// every backend: by id or alias in the project only, aliases unique per project, the draft and the
// published version, pages newest first both ways, and a cached read that sees every change.
import { describe, expect, it } from 'vitest';
import type { Store, TemplateContent, TemplateRow } from '../../../control/store/index.js';
import { uuidv7 } from '../../../core/ids.js';

export interface TemplatesFixture {
  store: () => Store;
  projectId: () => string;
  now: number;
}

export function describeTemplates(fx: TemplatesFixture): void {
  describe('templates', () => {
    const content = (html: string, versionAt: number): TemplateContent => ({
      versionId: uuidv7(versionAt),
      from: 'Acme <hello@acme.test>',
      subject: 'Hi {{{NAME}}}',
      replyTo: ['help@acme.test'],
      html,
      text: null,
      variables: [{ key: 'NAME', type: 'string', fallback: 'there', createdAt: versionAt, updatedAt: versionAt }],
    });
    const template = (i: number, o: Partial<TemplateRow> = {}): TemplateRow => ({
      id: uuidv7(fx.now + i),
      projectId: fx.projectId(),
      name: `t${i}`,
      alias: null,
      draft: content(`<p>v${i}</p>`, fx.now + i),
      published: null,
      publishedAt: null,
      createdAt: fx.now + i,
      updatedAt: fx.now + i,
      ...o,
    });
    const otherProject = async () => {
      const id = `prj_other_${Math.random().toString(36).slice(2, 8)}`;
      await fx.store().projects.create({ id, slug: id, name: 'Other', plan: 'free', createdAt: fx.now }, []);
      return id;
    };

    it('create, get by id or alias (in the project only), and the whole row back', async () => {
      const s = fx.store();
      const t = template(1, { alias: 'welcome' });
      expect(await s.templates.create(t)).toBe('created');
      expect(await s.templates.get(fx.projectId(), t.id)).toEqual(t);
      expect(await s.templates.get(fx.projectId(), 'welcome')).toEqual(t);
      const other = await otherProject();
      expect(await s.templates.get(other, t.id)).toBeUndefined();
      expect(await s.templates.get(other, 'welcome')).toBeUndefined();
      expect(await s.templates.get(fx.projectId(), 'nope')).toBeUndefined();
    });

    it('an alias is unique in its project, not across projects; NULL aliases do not collide', async () => {
      const s = fx.store();
      expect(await s.templates.create(template(1, { alias: 'a1' }))).toBe('created');
      const t2 = template(2, { alias: 'a1' });
      expect(await s.templates.create(t2)).toBe('alias_taken');
      expect(await s.templates.get(fx.projectId(), t2.id)).toBeUndefined();
      const t3 = template(3);
      expect(await s.templates.create(t3)).toBe('created');
      expect(await s.templates.create(template(4))).toBe('created');
      const other = await otherProject();
      expect(await s.templates.create(template(5, { projectId: other, alias: 'a1' }))).toBe('created');
      // Taking another template's alias by update is refused too, and changes nothing.
      expect(await s.templates.update({ ...t3, alias: 'a1', name: 'renamed' })).toBe('alias_taken');
      expect((await s.templates.get(fx.projectId(), t3.id))!.name).toBe('t3');
      expect(await s.templates.update({ ...t3, alias: 'a3' })).toBe('updated');
      expect((await s.templates.get(fx.projectId(), 'a3'))!.id).toBe(t3.id);
    });

    it('update writes name, alias and draft and is seen at once by a cached read; publish copies the draft', async () => {
      const s = fx.store();
      const t = template(1, { alias: 'order' });
      await s.templates.create(t);
      expect((await s.templates.get(fx.projectId(), 'order'))!.published).toBeNull(); // now cached
      const published = await s.templates.publish(fx.projectId(), t.id, fx.now + 10);
      expect(published).toMatchObject({ id: t.id, published: t.draft, publishedAt: fx.now + 10, updatedAt: fx.now + 10 });
      expect((await s.templates.get(fx.projectId(), 'order'))!.published).toEqual(t.draft);
      const draft = content('<p>v2</p>', fx.now + 20);
      expect(await s.templates.update({ ...published!, name: 'Order', draft, updatedAt: fx.now + 20 })).toBe('updated');
      const after = (await s.templates.get(fx.projectId(), 'order'))!;
      expect(after).toMatchObject({ name: 'Order', draft, published: t.draft, updatedAt: fx.now + 20 });
      // The old alias no longer names it once changed.
      expect(await s.templates.update({ ...after, alias: 'order-2' })).toBe('updated');
      expect(await s.templates.get(fx.projectId(), 'order')).toBeUndefined();
      expect((await s.templates.get(fx.projectId(), 'order-2'))!.id).toBe(t.id);
    });

    it("another project's template cannot be updated, published or removed", async () => {
      const s = fx.store();
      const t = template(1);
      await s.templates.create(t);
      const other = await otherProject();
      expect(await s.templates.update({ ...t, projectId: other, name: 'stolen' })).toBe('not_found');
      expect(await s.templates.publish(other, t.id, fx.now)).toBeUndefined();
      expect(await s.templates.remove(other, t.id)).toBe(false);
      expect(await s.templates.get(fx.projectId(), t.id)).toMatchObject({ name: 't1', published: null });
    });

    it('remove: gone for get (also cached) and list', async () => {
      const s = fx.store();
      const t = template(1, { alias: 'bye' });
      await s.templates.create(t);
      expect(await s.templates.get(fx.projectId(), 'bye')).toBeDefined();
      expect(await s.templates.remove(fx.projectId(), t.id)).toBe(true);
      expect(await s.templates.remove(fx.projectId(), t.id)).toBe(false);
      expect(await s.templates.get(fx.projectId(), 'bye')).toBeUndefined();
      expect((await s.templates.list(fx.projectId(), { limit: 10 })).templates).toEqual([]);
    });

    it('list: newest first, pages with a cursor both ways, the project only', async () => {
      const s = fx.store();
      const ids: string[] = [];
      for (let i = 1; i <= 5; i++) {
        const t = template(i);
        await s.templates.create(t);
        ids.push(t.id);
      }
      await s.templates.create(template(6, { projectId: await otherProject() }));
      const first = await s.templates.list(fx.projectId(), { limit: 2 });
      expect(first.templates.map((t) => t.id)).toEqual([ids[4], ids[3]]);
      expect(first.hasMore).toBe(true);
      const next = await s.templates.list(fx.projectId(), { limit: 2, after: ids[3] });
      expect(next.templates.map((t) => t.id)).toEqual([ids[2], ids[1]]);
      expect(next.hasMore).toBe(true);
      const last = await s.templates.list(fx.projectId(), { limit: 2, after: ids[1] });
      expect(last.templates.map((t) => t.id)).toEqual([ids[0]]);
      expect(last.hasMore).toBe(false);
      const back = await s.templates.list(fx.projectId(), { limit: 2, before: ids[1] });
      expect(back.templates.map((t) => t.id)).toEqual([ids[3], ids[2]]);
      expect(back.hasMore).toBe(true);
      expect((await s.templates.list(fx.projectId(), { limit: 100 })).templates).toHaveLength(5);
    });
  });
}
