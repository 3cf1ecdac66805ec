// control/inbound/routes.ts's Content-Disposition: any file name, nothing that can end or split the header.
import { describe, expect, it } from 'vitest';
import { contentDisposition } from '../../../control/inbound/routes.js';

describe('contentDisposition', () => {
  it('always a download; ASCII name quoted safely, the whole name in filename*', () => {
    expect(contentDisposition('invoice.pdf')).toBe(`attachment; filename="invoice.pdf"; filename*=UTF-8''invoice.pdf`);
    expect(contentDisposition(null)).toBe(`attachment; filename="attachment"; filename*=UTF-8''attachment`);
    const tricky = contentDisposition('a"b\\c\r\nSet-Cookie: x=1;é.html');
    expect(tricky).not.toMatch(/[\r\n]/);
    expect(tricky).toBe(`attachment; filename="a_b_c__Set-Cookie: x=1;_.html"; filename*=UTF-8''a%22b%5Cc%0D%0ASet-Cookie%3A%20x%3D1%3B%C3%A9.html`);
  });
});
