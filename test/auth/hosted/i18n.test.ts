// auth/hosted/i18n.ts: one table of the widget's words in each language, holes filled by name, the
// language chosen from the page's choice, then Accept-Language, then English.
import { describe, expect, it } from 'vitest';
import { dictionaries, errorKeys, langs, pickLang, t } from '../../../auth/hosted/i18n.js';

describe('the dictionaries', () => {
  it('every language has every phrase, and the same holes as English', () => {
    const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    for (const lang of langs) {
      expect(Object.keys(dictionaries[lang]).sort()).toEqual(Object.keys(dictionaries.en).sort());
      for (const [key, phrase] of Object.entries(dictionaries[lang])) {
        expect(phrase.trim(), `${lang}.${key}`).not.toBe('');
        expect(holes(phrase), `${lang}.${key}`).toEqual(holes(dictionaries.en[key as keyof typeof dictionaries.en]));
      }
    }
  });

  it('every error the widget explains has a phrase', () => {
    for (const key of Object.values(errorKeys)) expect(dictionaries.en[key]).toBeDefined();
  });
});

describe('t', () => {
  it('fills the holes it is given and leaves the others as they are', () => {
    expect(t('en', 'title', { name: 'Acme' })).toBe('Sign in to Acme');
    expect(t('ru', 'resendIn', { s: 30 })).toBe('Новый код через 30 с');
    expect(t('en', 'title')).toBe('Sign in to {name}');
  });

  it('inserts values as they are (escaping is the page’s job), and a value is not read again for holes', () => {
    expect(t('en', 'title', { name: '{name} <b>' })).toBe('Sign in to {name} <b>');
  });
});

describe('pickLang', () => {
  it('an explicit choice wins when it is a known language', () => {
    expect(pickLang('ru', 'en-US')).toBe('ru');
    expect(pickLang('en', 'ru')).toBe('en');
    expect(pickLang('de', 'ru-RU,ru;q=0.9')).toBe('ru');
  });

  it('else the first known language of Accept-Language, else English', () => {
    expect(pickLang(undefined, 'de-DE, ru;q=0.8, en;q=0.5')).toBe('ru');
    expect(pickLang(undefined, 'EN-gb')).toBe('en');
    expect(pickLang(undefined, 'fr, de')).toBe('en');
    expect(pickLang(undefined, undefined)).toBe('en');
    expect(pickLang(undefined, '')).toBe('en');
  });
});
