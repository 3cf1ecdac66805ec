// A template as the API shows it, in Resend's shape: its draft (what an edit changed), whether
// it was ever published, and whether the draft differs from what sends use.
import type { TemplateRow } from '../store/index.js';

const iso = (ms: number) => new Date(ms).toISOString();

export const templateListItem = (t: TemplateRow) => ({
  id: t.id,
  name: t.name,
  alias: t.alias,
  status: t.published ? ('published' as const) : ('draft' as const),
  published_at: t.publishedAt === null ? null : iso(t.publishedAt),
  created_at: iso(t.createdAt),
  updated_at: iso(t.updatedAt),
});

export function templateView(t: TemplateRow) {
  const d = t.draft;
  return {
    object: 'template' as const,
    ...templateListItem(t),
    from: d.from,
    subject: d.subject,
    reply_to: d.replyTo,
    html: d.html,
    text: d.text,
    variables: d.variables.map((v) => ({ key: v.key, type: v.type, fallback_value: v.fallback, created_at: iso(v.createdAt), updated_at: iso(v.updatedAt) })),
    has_unpublished_versions: t.published !== null && t.published.versionId !== d.versionId,
    current_version_id: d.versionId,
  };
}
