// The widget's words in English and Russian. One table, used by the server
// (the first render) and bundled into the widget's script (switching language
// in the page and the messages of errors).
export type Lang = 'en' | 'ru';
export const langs: readonly Lang[] = ['en', 'ru'];

const en = {
  title: 'Sign in to {name}',
  continueWith: 'Continue with {provider}',
  or: 'or',
  language: 'Language',
  emailLabel: 'Email',
  emailHint: 'We will email you a 6-digit code.',
  sendCode: 'Send code',
  sending: 'Sending…',
  codeSent: 'We sent a 6-digit code to {email}. It is valid for 10 minutes.',
  codeLabel: 'Code from the email',
  signIn: 'Sign in',
  checking: 'Checking…',
  resend: 'Send a new code',
  resendIn: 'New code in {s} s',
  newCodeSent: 'A new code is on its way.',
  changeEmail: 'Use another email',
  redirecting: 'Signing you in…',
  noMethods: 'No sign-in methods are enabled for this project.',
  errEmail: 'Enter a valid email address, like name@example.com.',
  errCodeFormat: 'The code is 6 digits.',
  errInvalidCode: 'That code is wrong. Check the email and try again.',
  errExpired: 'This code has expired. Ask for a new one.',
  errTooMany: 'Too many wrong tries. Ask for a new code.',
  errWait: 'Too many requests. Try again in {s} s.',
  errProvider: 'This sign-in method is not available.',
  errRegion: 'This sign-in method is not available in your region.',
  errRedirect: 'This site is not allowed to use sign-in for {name}.',
  errNotFound: 'This sign-in page does not exist.',
  errNetwork: 'Could not reach the server. Check your connection and try again.',
  errGeneric: 'Something went wrong. Please try again.',
  passkeySignIn: 'Sign in with a passkey',
  passkeyWaiting: 'Waiting for your passkey…',
  errPasskey: 'That passkey could not be used here. Try again, or sign in another way.',
  errPasskeyCancelled: 'No passkey was chosen. Try again, or sign in another way.',
  linkHint: 'We will email you a sign-in link.',
  sendLink: 'Email me a sign-in link',
  checkEmail: 'Check your email',
  linkSent: 'We sent a sign-in link to {email}. Open it in this browser within 10 minutes.',
  resendLink: 'Send a new link',
  resendLinkIn: 'New link in {s} s',
  newLinkSent: 'A new link is on its way.',
};

export type Key = keyof typeof en;

const ru: Record<Key, string> = {
  title: 'Вход в {name}',
  continueWith: 'Войти через {provider}',
  or: 'или',
  language: 'Язык',
  emailLabel: 'Электронная почта',
  emailHint: 'Мы пришлём код из 6 цифр.',
  sendCode: 'Получить код',
  sending: 'Отправляем…',
  codeSent: 'Мы отправили код из 6 цифр на {email}. Он действует 10 минут.',
  codeLabel: 'Код из письма',
  signIn: 'Войти',
  checking: 'Проверяем…',
  resend: 'Отправить новый код',
  resendIn: 'Новый код через {s} с',
  newCodeSent: 'Новый код уже в пути.',
  changeEmail: 'Указать другую почту',
  redirecting: 'Выполняем вход…',
  noMethods: 'Для этого проекта не включён ни один способ входа.',
  errEmail: 'Введите адрес почты, например name@example.com.',
  errCodeFormat: 'Код состоит из 6 цифр.',
  errInvalidCode: 'Неверный код. Проверьте письмо и попробуйте ещё раз.',
  errExpired: 'Срок действия кода истёк. Запросите новый.',
  errTooMany: 'Слишком много неверных попыток. Запросите новый код.',
  errWait: 'Слишком много запросов. Попробуйте через {s} с.',
  errProvider: 'Этот способ входа недоступен.',
  errRegion: 'Этот способ входа недоступен в вашем регионе.',
  errRedirect: 'Этому сайту не разрешён вход в {name}.',
  errNotFound: 'Такой страницы входа нет.',
  errNetwork: 'Нет связи с сервером. Проверьте подключение и попробуйте ещё раз.',
  errGeneric: 'Что-то пошло не так. Попробуйте ещё раз.',
  passkeySignIn: 'Войти с ключом доступа',
  passkeyWaiting: 'Ждём ваш ключ доступа…',
  errPasskey: 'Этот ключ доступа здесь не подходит. Попробуйте ещё раз или войдите другим способом.',
  errPasskeyCancelled: 'Ключ доступа не выбран. Попробуйте ещё раз или войдите другим способом.',
  linkHint: 'Мы пришлём ссылку для входа.',
  sendLink: 'Прислать ссылку для входа',
  checkEmail: 'Проверьте почту',
  linkSent: 'Мы отправили ссылку для входа на {email}. Откройте её в этом браузере в течение 10 минут.',
  resendLink: 'Отправить новую ссылку',
  resendLinkIn: 'Новая ссылка через {s} с',
  newLinkSent: 'Новая ссылка уже в пути.',
};

export const dictionaries: Record<Lang, Record<Key, string>> = { en, ru };

/** The phrase `key` in `lang` with `{name}`-style holes filled. */
export function t(lang: Lang, key: Key, vars: Record<string, string | number> = {}): string {
  return dictionaries[lang][key].replace(/\{(\w+)\}/g, (m, v: string) => (v in vars ? String(vars[v]) : m));
}

/** `en`/`ru` from an explicit choice, else the Accept-Language header, else English. */
export function pickLang(explicit: string | undefined, acceptLanguage: string | undefined): Lang {
  if (explicit === 'ru' || explicit === 'en') return explicit;
  const first = (acceptLanguage ?? '')
    .split(',')
    .map((s) => s.trim().slice(0, 2).toLowerCase())
    .find((s) => s === 'ru' || s === 'en');
  return first ?? 'en';
}

/** API error codes → what the widget tells the person. */
export const errorKeys: Record<string, Key> = {
  INVALID_CODE: 'errInvalidCode',
  CODE_EXPIRED: 'errExpired',
  TOO_MANY_ATTEMPTS: 'errTooMany',
  RATE_LIMIT_EXCEEDED: 'errWait',
  TOO_MANY_PENDING_SIGN_INS: 'errWait',
  PROVIDER_NOT_ENABLED: 'errProvider',
  REGION_NOT_ALLOWED: 'errRegion',
  REDIRECT_NOT_ALLOWED: 'errRedirect',
  NOT_FOUND: 'errNotFound',
};
