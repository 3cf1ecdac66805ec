// The one HTML escaper: text and attribute values in the pages and mails we render.
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
