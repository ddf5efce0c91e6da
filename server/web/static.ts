// The web client's files (web/ at the repository root): the page at `/`, and each module and
// stylesheet at `/app/<name>`. A `.ts` module is served as JavaScript, its types stripped by Node's
// own `stripTypeScriptTypes` (no bundler, no build step); the result is kept in memory until the
// file changes. Names are matched against one pattern (no directories, no dots but the extension),
// so a path can never leave web/.
import { readFile, stat } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Express, Response } from 'express';
import { ApiError } from '../http/errors.ts';

export const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');

const NAME = /^[a-z][a-z0-9-]{0,63}\.(ts|css|svg)$/;
const TYPES: Record<string, string> = {
  ts: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  html: 'text/html; charset=utf-8',
};

interface Compiled {
  mtimeMs: number;
  size: number;
  body: Buffer;
}

export function installStaticRoutes(app: Express, options: { dir?: string } = {}) {
  const dir = options.dir ?? WEB_DIR;
  const cache = new Map<string, Compiled>();

  async function load(name: string): Promise<Buffer> {
    const file = path.join(dir, name);
    let info;
    try {
      info = await stat(file);
    } catch {
      throw new ApiError(404, 'not_found');
    }
    if (!info.isFile()) throw new ApiError(404, 'not_found');
    const cached = cache.get(name);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.body;
    const text = await readFile(file, 'utf8');
    const body = Buffer.from(name.endsWith('.ts') ? stripTypeScriptTypes(text, { mode: 'strip', sourceUrl: `/app/${name}` }) : text);
    cache.set(name, { mtimeMs: info.mtimeMs, size: info.size, body });
    return body;
  }

  const send = (res: Response, name: string, body: Buffer) => {
    res.set('content-type', TYPES[name.split('.').pop()!]!);
    // revalidated on every load (the files change with a deploy, the URLs do not)
    res.set('cache-control', 'no-cache');
    res.send(body);
  };

  app.get('/', async (_req, res) => send(res, 'index.html', await load('index.html')));
  app.get('/app/:name', async (req, res) => {
    const name = String(req.params.name);
    if (!NAME.test(name)) throw new ApiError(404, 'not_found');
    send(res, name, await load(name));
  });
}
