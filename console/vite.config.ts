// The operator console's build: static files served by control on the admin listener at /console/
// (control/console). Hashed names under assets/ (cached for a year), no inline script or style and no
// source maps: the CSP is script-src 'self'; style-src 'self'.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  publicDir: false,
  build: {
    outDir: process.env.POSTGATE_CONSOLE_OUT || path.join(here, '..', 'dist', 'console'),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // The polyfill is an inline script the CSP would refuse; every browser we support has modulepreload.
    modulePreload: { polyfill: false },
    // Inlined assets would be data: URLs in the stylesheet; keep every asset a file.
    assetsInlineLimit: 0,
    target: 'es2022',
    reportCompressedSize: true,
  },
});
