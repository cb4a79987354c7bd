// A folder of real files served as a site of the test web: real pages (a
// package's HTML documentation, say) behind any number of virtual hosts, each
// host serving the same folder. The files are read once and shared by every
// host, so eight hosts cost the memory of one folder. The pages a crawler must
// fetch are those reachable from `/` by same-host `<a href>` links, computed
// here from the files themselves (folderPages), the way web.expectedPages does
// for generated sites.
import fs from 'node:fs';
import path from 'node:path';
import { Parser } from 'htmlparser2';
import type { SiteSpec } from './test-web';

export interface FolderFile {
  type: string;
  body: Buffer;
}

/** Every file of a folder (subfolders included), by URL path (`/a/b.html`). */
export type FolderFiles = ReadonlyMap<string, FolderFile>;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml',
};

const isHtml = (type: string): boolean => type.startsWith('text/html');

/** Reads a folder whole. Symbolic links are followed; other special files are left out. */
export function loadFolder(dir: string): FolderFiles {
  const out = new Map<string, FolderFile>();
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(e.parentPath, e.name);
    if (!fs.statSync(file).isFile()) continue;
    const urlPath = `/${path.relative(dir, file).split(path.sep).map(encodeURIComponent).join('/')}`;
    out.set(urlPath, { type: TYPES[path.extname(e.name).toLowerCase()] ?? 'application/octet-stream', body: fs.readFileSync(file) });
  }
  if (out.size === 0) throw new Error(`folder ${dir} has no files to serve`);
  return out;
}

/** The file a request path names: a folder's path (`/`, `/a/`) is its index.html. */
function fileFor(files: FolderFiles, urlPath: string): FolderFile | undefined {
  return files.get(urlPath.endsWith('/') ? `${urlPath}index.html` : urlPath);
}

/**
 * A site serving `files` on `host`: GET and HEAD of a file's path answer it
 * with its type; anything else (robots.txt too, unless the folder has one)
 * falls through to the test web, which answers an allow-all robots.txt and
 * 404 for the rest.
 */
export function folderSite(host: string, files: FolderFiles): SiteSpec {
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const file = fileFor(files, ctx.path);
      if (!file) return false;
      ctx.send(200, file.type, file.body);
      return true;
    },
  };
}

/**
 * Targets (path and query, fragment dropped) of the HTML pages reachable
 * from `/` by `<a href>` links that stay on the site, `/` first: what a
 * crawler following every such link requests. Links to files that do not
 * exist, to other hosts or to anything but HTML are not followed.
 */
export function folderPages(files: FolderFiles): string[] {
  const base = 'http://folder.invalid';
  if (!fileFor(files, '/')) throw new Error('the folder has no index.html: no page to start from');
  const seen = new Set<string>(['/']);
  const queue = ['/'];
  for (let i = 0; i < queue.length; i++) {
    const from = queue[i];
    const page = fileFor(files, new URL(from, base).pathname)!;
    const hrefs: string[] = [];
    const parser = new Parser({
      onopentag(name, attrs) {
        if (name === 'a' && attrs.href !== undefined) hrefs.push(attrs.href);
      },
    });
    parser.end(page.body.toString('utf8'));
    for (const href of hrefs) {
      let u: URL;
      try {
        u = new URL(href, `${base}${from}`);
      } catch {
        continue;
      }
      const target = u.pathname + u.search;
      if (u.origin !== base || seen.has(target)) continue;
      const file = fileFor(files, u.pathname);
      if (!file || !isHtml(file.type)) continue;
      seen.add(target);
      queue.push(target);
    }
  }
  return queue;
}
