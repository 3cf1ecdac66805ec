// <Button provider="google" />: a sign-in button with the provider's mark that
// starts the OAuth sign-in through the nearest <PostgateProvider>.
import { createElement, type ButtonHTMLAttributes, type CSSProperties } from 'react';
import { markOf } from './marks.js';
import { usePostgate } from './react.js';

export type ButtonProvider = 'google' | 'vk' | 'yandex' | 'telegram' | 'github' | (string & {});

export interface ButtonProps extends Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'onClick' | 'type'> {
  provider: ButtonProvider;
  /** The label; default "Continue with <Provider>" (or the Russian one with lang="ru"). */
  label?: string;
  lang?: 'en' | 'ru';
  /** Where this sign-in returns; default the provider's config callbackURL, else the current page. */
  callbackURL?: string;
}

const baseStyle: CSSProperties = {
  display: 'inline-flex',
  alignItems: 'center',
  justifyContent: 'center',
  gap: 10,
  minHeight: 44,
  padding: '10px 16px',
  font: 'inherit',
  fontWeight: 500,
  color: '#1f2328',
  background: '#fff',
  border: '1px solid #d1d9e0',
  borderRadius: 10,
  cursor: 'pointer',
};

export function ProviderMark({ provider, size = 20 }: { provider: string; size?: number }) {
  return (
    <svg viewBox="0 0 24 24" width={size} height={size} aria-hidden="true" focusable="false">
      {markOf(provider).shapes.map((s, i) => createElement(s.tag, { key: i, ...s.attrs }))}
    </svg>
  );
}

export function Button({ provider, label, lang = 'en', callbackURL, style, disabled, ...rest }: ButtonProps) {
  const { signIn, loading } = usePostgate();
  const mark = markOf(provider);
  const name = lang === 'ru' ? (mark.nameRu ?? mark.name) : mark.name;
  const text = label ?? (lang === 'ru' ? `Войти через ${name}` : `Continue with ${name}`);
  return (
    <button
      type="button"
      data-provider={provider}
      className="postgate-button"
      style={{ ...baseStyle, ...style }}
      disabled={disabled ?? loading}
      onClick={() => void signIn(provider, { method: 'oauth', ...(callbackURL ? { callbackURL } : {}) })}
      {...rest}
    >
      <ProviderMark provider={provider} />
      <span>{text}</span>
    </button>
  );
}

export { Button as SignInButton };
