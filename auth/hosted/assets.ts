// The widget's browser files. The scripts are TypeScript (auth/hosted/browser)
// bundled by esbuild once per process, on first use; nothing is built ahead or
// kept on disk. Each asset carries a short content hash for cache busting. esbuild's
// JavaScript API is imported then too: loaded at start it held 1.4 MB of control's heap
// in every process, the many that never serve the widget included.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface Asset {
  body: string;
  hash: string;
  type: string;
}

const hashOf = (body: string) => crypto.createHash('sha256').update(body).digest('base64url').slice(0, 12);

async function script(entry: string): Promise<Asset> {
  const { build } = await import('esbuild');
  const out = await build({
    entryPoints: [path.join(here, 'browser', entry)],
    bundle: true,
    write: false,
    format: 'iife',
    target: ['es2020'],
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const body = out.outputFiles[0]!.text;
  return { body, hash: hashOf(body), type: 'text/javascript; charset=utf-8' };
}

async function stylesheet(file: string): Promise<Asset> {
  const body = await fs.readFile(path.join(here, file), 'utf8');
  return { body, hash: hashOf(body), type: 'text/css; charset=utf-8' };
}

export interface Assets {
  embed: Asset;
  widget: Asset;
  css: Asset;
}

let built: Promise<Assets> | undefined;

export function assets(): Promise<Assets> {
  built ??= Promise.all([script('embed.ts'), script('widget.ts'), stylesheet('widget.css')]).then(([embed, widget, css]) => {
    // esbuild's helper process (~14 MB) is not needed until a rebuild, which starts it again.
    void import('esbuild').then(({ stop }) => stop());
    return { embed, widget, css };
  });
  // A failed build is retried on the next request rather than cached.
  built.catch(() => {
    built = undefined;
  });
  return built;
}
