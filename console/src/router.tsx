// Path routing under /console/ with the history API (no router library: seven pages and a detail each).
import { type MouseEvent, type ReactNode, useSyncExternalStore } from 'react';

export const BASE = '/console';
const listeners = new Set<() => void>();
window.addEventListener('popstate', () => {
  for (const l of listeners) l();
});
const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};
/** The path under /console, with the query: '/emails?to=a@b.c'. */
const snapshot = () => (window.location.pathname.slice(BASE.length) || '/') + window.location.search;

export function useLocation(): { path: string; query: URLSearchParams } {
  const full = useSyncExternalStore(subscribe, snapshot);
  const q = full.indexOf('?');
  return { path: q < 0 ? full : full.slice(0, q), query: new URLSearchParams(q < 0 ? '' : full.slice(q)) };
}

export function navigate(to: string, replace = false): void {
  const url = BASE + to;
  if (url === window.location.pathname + window.location.search) return;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  for (const l of listeners) l();
  if (!replace) window.scrollTo(0, 0);
}

export function Link({ to, children, className, current }: { to: string; children: ReactNode; className?: string; current?: boolean }) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return (
    <a href={BASE + to} onClick={click} className={className} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}
