// {id_url}/embed/v1.js: put
//   <script src="{id_url}/embed/v1.js" data-slug="…" data-redirect-uri="…" data-id-host="{id_url}"></script>
// where the form should be. It frames the sign-in form from {id_url} and does
// what a cross-origin frame may not: size the frame and navigate the top
// window (to the provider, or to the callback with svc_code); it keeps the verifier that
// binds the sign-in to this tab (auth/sdk/src/binding.ts). Optional:
// data-lang (en|ru), data-target (a CSS selector of the container), data-code-binding="off".
import { isOurs, SOURCE, type ToWidget } from './messages.js';
import { pendingChallenge, readVerifier } from '../../sdk/src/binding.js';
import { keepLinkVerifier } from '../../sdk/src/magic-links.js';

interface Instance {
  frame: HTMLIFrameElement;
  origin: string;
}

declare global {
  interface Window {
    PostgateWidget?: { setLanguage(lang: string): void; instances: Instance[] };
  }
}

const script = document.currentScript as HTMLScriptElement | null;

async function mount(el: HTMLScriptElement): Promise<void> {
  const d = el.dataset;
  const idHost = (d.idHost || new URL(el.src).origin).replace(/\/+$/, '');
  const idOrigin = new URL(idHost).origin;
  const target = d.target ? document.querySelector(d.target) : null;
  const box = document.createElement('div');
  box.className = 'postgate-widget';
  box.dataset.state = 'loading';
  if (target) target.appendChild(box);
  else el.insertAdjacentElement('afterend', box);

  const src = new URL(`${idHost}/api/v1/auth/hosted/widget`);
  src.searchParams.set('slug', d.slug ?? '');
  src.searchParams.set('redirect_uri', d.redirectUri ?? '');
  src.searchParams.set('origin', location.origin);
  if (d.lang) src.searchParams.set('lang', d.lang);
  // Binds the form's sign-ins to this tab: the callback page exchanges svc_code with the verifier
  // kept here (sessionStorage 'postgate.code-verifier'; the SDK sends it). Needs a secure context.
  // data-code-binding="off" is for callbacks that cannot read sessionStorage (a server-only exchange); it gives up the defence.
  if (d.codeBinding !== 'off') {
    try {
      src.searchParams.set('code_challenge', await pendingChallenge());
    } catch {
      /* no WebCrypto (plain http on a non-local host): unbound, as before */
    }
  }

  const frame = document.createElement('iframe');
  frame.src = src.toString();
  frame.title = d.title || 'Sign in';
  // The frame may run its own scripts and forms, nothing else: navigation of this page is ours to do.
  frame.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  // Passkeys in the form (postgate's origin inside this page): browsers allow WebAuthn in a cross-origin frame only when delegated.
  frame.setAttribute('allow', 'publickey-credentials-get; publickey-credentials-create');
  Object.assign(frame.style, { border: '0', width: '100%', maxWidth: '440px', height: '460px', display: 'block', colorScheme: 'normal' });
  box.appendChild(frame);

  let ready = false;
  window.addEventListener('message', (e: MessageEvent) => {
    if (e.origin !== idOrigin || e.source !== frame.contentWindow || !isOurs(e.data)) return;
    const m = e.data as { type: string; height?: unknown; url?: unknown; lang?: unknown };
    if (m.type === 'ready') {
      ready = true;
      box.dataset.state = 'ready';
      box.querySelector('.postgate-notice')?.remove();
    } else if (m.type === 'resize' && typeof m.height === 'number' && m.height > 0 && m.height < 5000) {
      frame.style.height = `${Math.ceil(m.height)}px`;
    } else if (m.type === 'magic-link-sent') {
      // magic-links: the email opens the link in a new tab of this browser; it finds the verifier in localStorage.
      keepLinkVerifier(readVerifier());
    } else if (m.type === 'navigate' && typeof m.url === 'string') {
      const url = new URL(m.url, idHost);
      if (url.protocol === 'https:' || url.protocol === 'http:') {
        box.dataset.state = 'navigating';
        location.assign(url.toString());
      }
    }
  });

  // A refused frame (this origin not allowed: CSP frame-ancestors) still fires load, but never says ready.
  frame.addEventListener('load', () => {
    setTimeout(() => {
      if (ready) return;
      box.dataset.state = 'refused';
      const note = document.createElement('p');
      note.className = 'postgate-notice';
      note.setAttribute('role', 'alert');
      note.textContent = `Sign-in could not be shown here. Is ${location.origin} among the allowed origins of project "${d.slug ?? ''}"? (postgate origin allow ${location.origin})`;
      box.appendChild(note);
    }, 400);
  });

  window.PostgateWidget ??= { instances: [], setLanguage };
  window.PostgateWidget.instances.push({ frame, origin: idOrigin });
}

function setLanguage(lang: string): void {
  for (const i of window.PostgateWidget?.instances ?? []) {
    const msg: ToWidget = { source: SOURCE, type: 'lang', lang };
    i.frame.contentWindow?.postMessage(msg, i.origin);
  }
}

if (script) void mount(script);
