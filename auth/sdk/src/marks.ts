// Brand marks of the sign-in providers, drawn simply on a 24×24 grid. Plain
// data, so the React Button and the hosted widget (rendered on the server)
// draw the same shapes.

export interface MarkShape {
  tag: 'path' | 'circle' | 'rect';
  /** SVG attributes, camelCase (React's spelling); the widget turns them into kebab-case. */
  attrs: Record<string, string | number>;
}

export interface Mark {
  /** Display name, and its Russian form where it differs. */
  name: string;
  nameRu?: string;
  shapes: MarkShape[];
}

const stroke = (color: string, width: number) => ({ fill: 'none', stroke: color, strokeWidth: width, strokeLinecap: 'round', strokeLinejoin: 'round' });

export const marks: Record<string, Mark> = {
  google: {
    name: 'Google',
    // The four-colour G: arcs of one circle (r = 8) and the blue bar.
    shapes: [
      { tag: 'path', attrs: { d: 'M17.66 6.34A8 8 0 0 0 4.48 9.26', ...stroke('#EA4335', 3.4), strokeLinecap: 'butt' } },
      { tag: 'path', attrs: { d: 'M4.48 9.26A8 8 0 0 0 4.48 14.74', ...stroke('#FBBC05', 3.4), strokeLinecap: 'butt' } },
      { tag: 'path', attrs: { d: 'M4.48 14.74A8 8 0 0 0 17.66 17.66', ...stroke('#34A853', 3.4), strokeLinecap: 'butt' } },
      { tag: 'path', attrs: { d: 'M17.66 17.66A8 8 0 0 0 20 12H12.2', ...stroke('#4285F4', 3.4), strokeLinecap: 'butt', strokeLinejoin: 'miter' } },
    ],
  },
  vk: {
    name: 'VK ID',
    shapes: [
      { tag: 'rect', attrs: { x: 1, y: 1, width: 22, height: 22, rx: 6, fill: '#0077FF' } },
      { tag: 'path', attrs: { d: 'M5.5 8l2.8 8 2.8-8M14 8v8M18.5 8L14.4 12l4.1 4', ...stroke('#FFFFFF', 2) } },
    ],
  },
  yandex: {
    name: 'Yandex ID',
    nameRu: 'Яндекс ID',
    shapes: [
      { tag: 'circle', attrs: { cx: 12, cy: 12, r: 11, fill: '#FC3F1D' } },
      // The letter Я: stem, bowl and leg.
      { tag: 'path', attrs: { d: 'M14.2 6v12M14.2 6.2h-2.6a3 3 0 0 0 0 6h2.6M12.2 12.2L9 18', ...stroke('#FFFFFF', 2) } },
    ],
  },
  telegram: {
    name: 'Telegram',
    shapes: [
      { tag: 'circle', attrs: { cx: 12, cy: 12, r: 11, fill: '#27A7E7' } },
      { tag: 'path', attrs: { d: 'M5.4 11.7L17.6 7l-2 10.2-4-2.9-1.7 2.1.2-3.2 5.6-4.9-7 4.1z', fill: '#FFFFFF' } },
    ],
  },
  github: {
    name: 'GitHub',
    shapes: [
      { tag: 'circle', attrs: { cx: 12, cy: 12, r: 11, fill: '#181717' } },
      // A cat's head with ears, and its neck.
      {
        tag: 'path',
        attrs: {
          d: 'M8 9.2V6.6l2.2 1.5a6.4 6.4 0 0 1 3.6 0L16 6.6v2.6c.9 1.2 1 2.9.5 4.1-.8 1.7-2.4 2.4-4.5 2.4s-3.7-.7-4.5-2.4c-.5-1.2-.4-2.9.5-4.1z',
          fill: '#FFFFFF',
        },
      },
      { tag: 'path', attrs: { d: 'M10.6 15.6V19M13.4 15.6V19', ...stroke('#FFFFFF', 1.6) } },
    ],
  },
  oidc: {
    name: 'OpenID Connect',
    // A key.
    shapes: [
      { tag: 'circle', attrs: { cx: 8, cy: 12, r: 4, ...stroke('#5F6368', 2.2) } },
      { tag: 'path', attrs: { d: 'M12 12h9M18 12v3M21 12v2.5', ...stroke('#5F6368', 2.2) } },
    ],
  },
  email: {
    name: 'Email',
    nameRu: 'Почта',
    shapes: [
      { tag: 'rect', attrs: { x: 3, y: 5.5, width: 18, height: 13, rx: 2, ...stroke('#5F6368', 2) } },
      { tag: 'path', attrs: { d: 'M3.8 7l8.2 6 8.2-6', ...stroke('#5F6368', 2) } },
    ],
  },
};

/** The mark of a provider, or the generic key for one we have no mark for. */
export const markOf = (provider: string): Mark => marks[provider] ?? { ...marks.oidc!, name: provider };
