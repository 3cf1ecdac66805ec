// A send naming a template becomes an ordinary send request: the template's published version
// rendered with the request's variables, its from, subject and reply_to where the request has
// none. Every door (REST, batch, SMTP, gRPC) comes through here, before the pipeline checks the
// result as any other request: what is stored and shown is the rendered email.
import { ApiError, invalid } from '../../core/errors.js';
import { codePoints } from '../../core/ajv-length.js';
import type { Limits } from '../../core/config.js';
import type { Store, TemplateContent } from '../store/index.js';
import { type Compiled, compile, oneLine, render, resolveValues, TemplateProblem } from './render.js';

/** `template` of a send request: the template's id or alias, and the values of its variables. */
export interface TemplateRef {
  id: string;
  variables?: Record<string, string | number>;
}

/** The fields a template can supply; the rest of the request passes through as it is. */
interface Renderable {
  from?: string;
  subject?: string;
  html?: string;
  text?: string;
  reply_to?: string | string[];
  template?: TemplateRef;
}

/** The request a template renders to: no `template`, from and subject always, and the template's bodies. */
export type Rendered<R> = Omit<R, 'template'> & { from: string; subject: string; html?: string; text?: string; reply_to?: string | string[] };

/** A published version cut into pieces, once. */
interface CompiledVersion {
  subject: Compiled | undefined;
  html: Compiled;
  text: Compiled | undefined;
  keys: Set<string>;
}

/** Compiled versions kept, and their characters in all (a version may be two bodies of 5 MB); past either the cache starts over. */
const MAX_COMPILED = 1000;
const MAX_COMPILED_CHARS = 64 * 1024 * 1024;

const refuse = (message: string) => new ApiError('TEMPLATE_INVALID', message);

export class TemplateRenderer {
  private readonly compiled = new Map<string, CompiledVersion>();
  private compiledChars = 0;

  constructor(
    private readonly store: Store,
    private readonly limits: Pick<Limits, 'maxBodyBytes' | 'maxSubjectLength'>,
  ) {}

  /** The request as it is when it names no template; else the rendered request, without `template`. */
  async apply<R extends Renderable>(projectId: string, req: R): Promise<Rendered<R>> {
    const ref = req.template;
    if (ref === undefined) return req as Rendered<R>;
    if (req.html !== undefined || req.text !== undefined) throw invalid('a send with a template takes no html or text: the template gives them');
    const t = await this.store.templates.get(projectId, ref.id);
    if (!t) throw refuse(`template ${JSON.stringify(ref.id.slice(0, 100))} not found`);
    const v = t.published;
    if (!v)
      throw refuse(`template ${JSON.stringify(ref.id.slice(0, 100))} is not published: publish it (POST /v1/templates/${t.id}/publish) before sending with it`);
    const c = this.version(t.id, v);
    try {
      const values = resolveValues(v.variables, ref.variables, c.keys);
      // A copy with `template` undefined (JSON drops it), not a rest spread: the spread that leaves a key out is a slow runtime path.
      const out = { ...req, template: undefined } as unknown as Rendered<R>;
      const from = req.from ?? v.from;
      if (!from) throw new TemplateProblem('from is missing: give it in the request or set it on the template');
      out.from = from;
      const subject = req.subject ?? (c.subject ? oneLine(this.rendered(c.subject, values, this.limits.maxSubjectLength, 'subject')) : undefined);
      if (subject === undefined) throw new TemplateProblem('subject is missing: give it in the request or set it on the template');
      out.subject = subject;
      if (req.reply_to === undefined && v.replyTo?.length) out.reply_to = v.replyTo;
      out.html = this.rendered(c.html, values, this.limits.maxBodyBytes, 'html');
      if (c.text) out.text = this.rendered(c.text, values, this.limits.maxBodyBytes, 'text');
      return out;
    } catch (err) {
      if (err instanceof TemplateProblem) throw refuse(`template ${JSON.stringify(ref.id.slice(0, 100))}: ${err.message}`);
      throw err;
    }
  }

  /** At most `max` code points, as the send schema counts them. */
  private rendered(c: Compiled, values: ReadonlyMap<string, string>, max: number, part: string): string {
    // render stops at 2 × max UTF-16 units (at least max code points); the exact count follows.
    const s = render(c, values, 2 * max);
    // A text of at most `max` UTF-16 units has at most `max` code points: only a longer one is counted.
    if (s === undefined || (s.length > max && codePoints(s) > max)) throw new TemplateProblem(`the rendered ${part} is longer than ${max} characters`);
    return s;
  }

  private version(id: string, v: TemplateContent): CompiledVersion {
    const key = `${id}/${v.versionId}`;
    let c = this.compiled.get(key);
    if (!c) {
      const subject = v.subject === null ? undefined : compile(v.subject, false);
      const html = compile(v.html, true);
      const text = v.text === null ? undefined : compile(v.text, false);
      const keys = new Set([...(subject?.keys ?? []), ...html.keys, ...(text?.keys ?? [])]);
      c = { subject, html, text, keys };
      const chars = v.html.length + (v.subject?.length ?? 0) + (v.text?.length ?? 0);
      if (this.compiled.size >= MAX_COMPILED || this.compiledChars + chars > MAX_COMPILED_CHARS) {
        this.compiled.clear();
        this.compiledChars = 0;
      }
      this.compiled.set(key, c);
      this.compiledChars += chars;
    }
    return c;
  }
}
