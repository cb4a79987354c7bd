// No two modules of the crawler (activities/, src/, workflows/) import each
// other, directly or round a longer loop. A cycle makes the order in which
// modules initialise depend on which one is loaded first (a value read at
// load time is then undefined), and it ties the modules together so neither
// can be understood or moved alone.
//
// Every static import and re-export counts, `import type` too: a type-only
// edge costs nothing at run time, but a cycle closed by one is still a
// tangle, and turns into a run-time cycle the day one of its imports starts
// using a value. Dynamic `import()` does not count: it runs after every
// module has loaded, which is what it is for (e.g. the CLI's lazy commands).
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const DIRS = ['activities', 'src', 'workflows'];

/** Every .ts file below DIRS, relative to ROOT with '/' separators. */
function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path.relative(ROOT, p).split(path.sep).join('/'));
    }
  };
  for (const d of DIRS) walk(path.join(ROOT, d));
  return out.sort();
}

/** The module specifiers of a file's static imports and re-exports. */
function staticImports(source: string, fileName: string): string[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const specs: string[] = [];
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) specs.push(st.moduleSpecifier.text);
    else if (ts.isExportDeclaration(st) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) specs.push(st.moduleSpecifier.text);
    // `import x = require('./y')`
    else if (ts.isImportEqualsDeclaration(st) && ts.isExternalModuleReference(st.moduleReference) && ts.isStringLiteral(st.moduleReference.expression)) {
      specs.push(st.moduleReference.expression.text);
    }
  }
  return specs;
}

/** The file a relative specifier names, as Node resolution finds it (`./x` is x.ts or x/index.ts); null for packages. */
function resolveRelative(from: string, spec: string, known: ReadonlySet<string>): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  for (const candidate of [`${base}.ts`, `${base}/index.ts`, base]) if (known.has(candidate)) return candidate;
  return null;
}

function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const targets = new Set<string>();
    for (const spec of staticImports(read(f), f)) {
      const to = resolveRelative(f, spec, known);
      if (to) targets.add(to);
    }
    graph.set(f, [...targets].sort());
  }
  return graph;
}

/**
 * One line per tangle (strongly connected component): a shortest loop
 * through its first file, e.g. `a.ts -> b.ts -> a.ts`, followed by the
 * other files of the tangle when the loop does not pass through all of them.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  // Tarjan's algorithm, iterative so a deep import chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; edge: number }[] = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) components.push(component.sort());
      }
    }
  }
  return components
    .map((component) => {
      const inside = new Set(component);
      const start = component[0]!;
      // Breadth-first from start, inside the component, back to start.
      const cameFrom = new Map<string, string>();
      const queue = [start];
      let last: string | null = null;
      for (let i = 0; i < queue.length && last === null; i++) {
        const node = queue[i]!;
        for (const to of graph.get(node) ?? []) {
          if (!inside.has(to)) continue;
          if (to === start) {
            last = node;
            break;
          }
          if (!cameFrom.has(to)) {
            cameFrom.set(to, node);
            queue.push(to);
          }
        }
      }
      const loop = [start];
      for (let node = last!; node !== start; node = cameFrom.get(node)!) loop.splice(1, 0, node);
      loop.push(start);
      const rest = component.filter((f) => !loop.includes(f));
      return loop.join(' -> ') + (rest.length > 0 ? ` (tangled with ${rest.join(', ')})` : '');
    })
    .sort();
}

test('no import cycle among the modules of activities/, src/ and workflows/', () => {
  const files = sourceFiles();
  // The walk found the code (a wrong ROOT would find nothing and pass).
  expect(files).toEqual(expect.arrayContaining(['activities/robots.ts', 'src/storage/warc-writer.ts', 'workflows/crawl-campaign.ts']));
  const graph = importGraph(files, (f) => fs.readFileSync(path.join(ROOT, f), 'utf8'));
  expect(importCycles(graph)).toEqual([]);
});

describe('the cycle finder', () => {
  const graphOf = (modules: Record<string, string>) => {
    const files = Object.keys(modules).sort();
    return importGraph(files, (f) => modules[f]!);
  };

  test('a type-only import closes a cycle; a dynamic import does not', () => {
    expect(
      importCycles(
        graphOf({
          'a/x.ts': "import { y } from './y';\nexport const x = y;",
          'a/y.ts': "import type { Z } from '../b/z';\nexport const y: Z = 1;",
          'b/z.ts': "export type { X } from '../a/x';\nexport type Z = number;",
        }),
      ),
    ).toEqual(['a/x.ts -> a/y.ts -> b/z.ts -> a/x.ts']);
    expect(
      importCycles(
        graphOf({
          'a/x.ts': "import { y } from './y';\nexport const x = y;",
          'a/y.ts': "export const y = 1;\nexport const later = () => import('./x');",
        }),
      ),
    ).toEqual([]);
  });

  test('folders resolve to their index.ts, packages are not followed, and every tangle is listed', () => {
    expect(
      importCycles(
        graphOf({
          'p/index.ts': "export * from './q';\nimport 'node:fs';",
          'p/q.ts': "import { r } from '.';\nimport ts from 'typescript';",
          'p/self.ts': "import './self';",
          'p/free.ts': "import './q';",
        }),
      ),
    ).toEqual(['p/index.ts -> p/q.ts -> p/index.ts', 'p/self.ts -> p/self.ts']);
  });
});
