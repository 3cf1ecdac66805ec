// The template language: raw and escaped places, values never read for places again, names that
// are not names left as text, and the refusals (undeclared, missing, wrong type, reserved, too long).
import { describe, expect, it } from 'vitest';
import { checkDeclarations, compile, type Declared, oneLine, render, resolveValues, TemplateProblem } from '../../../control/templates/render.js';

const run = (source: string, html: boolean, values: Record<string, string>, stopAt = 1e9) =>
  render(compile(source, html), new Map(Object.entries(values)), stopAt);
const problem = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (err) {
    if (err instanceof TemplateProblem) return err.message;
    throw err;
  }
  return undefined;
};

describe('compile and render', () => {
  it('{{{X}}} inserts the value as it is; {{X}} HTML-escapes it in html only', () => {
    const v = { NAME: `<b>"Tom" & 'Jerry'</b>` };
    expect(run('<p>{{{NAME}}}</p>', true, v)).toBe(`<p><b>"Tom" & 'Jerry'</b></p>`);
    expect(run('<p>{{NAME}}</p>', true, v)).toBe('<p>&#60;b&#62;&#34;Tom&#34; &#38; &#39;Jerry&#39;&#60;/b&#62;</p>');
    // Subject and plain text are not HTML: both forms give the value as it is.
    expect(run('Hi {{NAME}} / {{{NAME}}}', false, v)).toBe(`Hi ${v.NAME} / ${v.NAME}`);
  });

  it('allows spaces inside the braces and names every place once in keys', () => {
    const c = compile('{{ A }}{{{  B }}}{{A}}', true);
    expect([...c.keys]).toEqual(['A', 'B']);
    expect(
      render(
        c,
        new Map([
          ['A', '1'],
          ['B', '2'],
        ]),
        100,
      ),
    ).toBe('121');
  });

  it('a value holding template syntax is not expanded again', () => {
    const out = run('{{{A}}}|{{B}}', true, { A: '{{{B}}} {{B}}', B: 'secret' });
    expect(out).toBe('{{{B}}} {{B}}|secret');
  });

  it('anything that is not a plain name stays text: no sections, helpers, paths or code', () => {
    const src = '{{#if A}}x{{/if}} {{> partial}} {{contact.name}} {{A.constructor}} {{{ A + 1 }}} {{ constructor }}';
    const c = compile(src, true);
    expect([...c.keys]).toEqual(['constructor']);
    expect(render(c, new Map([['constructor', 'C']]), 1e6)).toBe('{{#if A}}x{{/if}} {{> partial}} {{contact.name}} {{A.constructor}} {{{ A + 1 }}} C');
  });

  it('four braces: the triple place wins, the extra braces stay text', () => {
    expect(run('{{{{A}}}}', true, { A: 'v' })).toBe('{v}');
  });

  it('stops past stopAt instead of growing without bound', () => {
    const c = compile('{{{A}}}'.repeat(1000), true);
    expect(render(c, new Map([['A', 'x'.repeat(10_000)]]), 50_000)).toBeUndefined();
    expect(render(c, new Map([['A', 'x']]), 50_000)).toBe('x'.repeat(1000));
  });
});

describe('checkDeclarations', () => {
  const d = (key: string, type: Declared['type'] = 'string', fallback: Declared['fallback'] = null): Declared => ({ key, type, fallback });

  it('refuses a variable used but not declared, in any text', () => {
    expect(problem(() => checkDeclarations([d('A')], [compile('{{{A}}} {{{B}}}', true)]))).toBe(
      "Variable 'B' is used in the template but not defined in the variables list",
    );
    expect(problem(() => checkDeclarations([d('A')], [compile('Hi {{C}}', false), undefined]))).toMatch(/'C'/);
    expect(problem(() => checkDeclarations([d('A'), d('B')], [compile('{{{A}}}{{B}}', true)]))).toBeUndefined();
  });

  it('refuses bad keys, reserved keys, duplicates, fallbacks of the wrong type and more than 50', () => {
    expect(problem(() => checkDeclarations([d('1A')], []))).toMatch(/variable key "1A"/);
    expect(problem(() => checkDeclarations([d('A-B')], []))).toMatch(/variable key/);
    expect(problem(() => checkDeclarations([d('x'.repeat(101))], []))).toMatch(/at most 100/);
    expect(problem(() => checkDeclarations([d('__proto__')], []))).toBeUndefined();
    expect(problem(() => checkDeclarations([d('EMAIL')], []))).toBe('variable key EMAIL is reserved');
    expect(problem(() => checkDeclarations([d('A'), d('A', 'number')], []))).toBe('variable A is declared twice');
    expect(problem(() => checkDeclarations([d('A', 'number', 'ten')], []))).toBe('variable A: fallback_value must be a number');
    expect(problem(() => checkDeclarations([d('A', 'string', 5)], []))).toBe('variable A: fallback_value must be a string');
    expect(problem(() => checkDeclarations([d('A', 'number', Number.POSITIVE_INFINITY)], []))).toMatch(/finite/);
    expect(
      problem(() =>
        checkDeclarations(
          Array.from({ length: 51 }, (_, i) => d(`V${i}`)),
          [],
        ),
      ),
    ).toMatch(/at most 50/);
  });
});

describe('resolveValues', () => {
  const declared: Declared[] = [
    { key: 'NAME', type: 'string', fallback: null },
    { key: 'PRICE', type: 'number', fallback: 25 },
    { key: 'CITY', type: 'string', fallback: 'Berlin' },
  ];

  it('takes given values, falls back, formats numbers and ignores names it does not declare', () => {
    const v = resolveValues(declared, { NAME: 'Ann', PRICE: 9.5, OTHER: 'x' }, ['NAME', 'PRICE', 'CITY']);
    expect(Object.fromEntries(v)).toEqual({ NAME: 'Ann', PRICE: '9.5', CITY: 'Berlin' });
  });

  it('refuses a required variable missing, a value of the wrong type, and a used name not declared', () => {
    expect(problem(() => resolveValues(declared, { PRICE: 1 }, []))).toBe('variable NAME has no fallback_value and was not given');
    expect(problem(() => resolveValues(declared, { NAME: 5 }, []))).toBe('variable NAME must be a string');
    expect(problem(() => resolveValues(declared, { NAME: 'a', PRICE: '5' }, []))).toBe('variable PRICE must be a number');
    expect(problem(() => resolveValues(declared, { NAME: 'a', PRICE: Number.NaN }, []))).toBe('variable PRICE must be a number');
    expect(problem(() => resolveValues(declared, { NAME: 'a' }, ['NAME', 'GHOST']))).toMatch(/'GHOST' is used/);
  });

  it('reads only own properties: a prototype name is no value', () => {
    const d: Declared[] = [{ key: 'constructor', type: 'string', fallback: null }];
    expect(problem(() => resolveValues(d, {}, ['constructor']))).toBe('variable constructor has no fallback_value and was not given');
    const withProto = JSON.parse('{"__proto__": "x"}') as Record<string, unknown>;
    expect([...resolveValues([{ key: '__proto__', type: 'string', fallback: null }], withProto, [])]).toEqual([['__proto__', 'x']]);
  });
});

describe('oneLine', () => {
  it('turns CR, LF and other controls into one space, keeping tabs', () => {
    expect(oneLine('a\r\nBcc: evil@x.test\nb\u0000c\td')).toBe('a Bcc: evil@x.test b c\td');
  });
});
