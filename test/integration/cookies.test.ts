// Sites behind a session cookie: one that sets it on its home page and
// answers 403 without it everywhere else, crawled with the defaults, with
// --cookies off, through a kill -9 of the worker, and one that admits only
// the holders of a cookie the crawl brings in a cookies.txt. The crawl
// through the kill starts first and waits out its worker's death while
// the others run.
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { WorkflowFailedError } from '@temporalio/client';
import path from 'node:path';
import type { SiteRequest, SiteSpec } from '../web/test-web';
import { createHarness, launch, outputOf, pageRequests, sleep, type CampaignHandle, type Harness } from '../support/harness';

jest.setTimeout(240_000);

/** What the site saw of each request: the session cookie it carried (null: none). */
interface Seen {
  path: string;
  sid: string | null;
}

/**
 * A members' site: `/` hands out a fresh session cookie to a visitor
 * without one (`issue`), every other page answers 403 to a request without
 * a session it issued (or one of `accepted`).
 */
function membersSite(host: string, o: { issue: boolean; accepted?: string[] }): { spec: SiteSpec; seen: Seen[]; issued: string[] } {
  const seen: Seen[] = [];
  const issued: string[] = [];
  const valid = new Set(o.accepted ?? []);
  const handler = ({ req, res, path: p }: SiteRequest): boolean => {
    if (p === '/robots.txt') return false;
    const sid = /(?:^|;\s*)sid=([^;]*)/.exec(req.headers.cookie ?? '')?.[1] ?? null;
    seen.push({ path: p, sid });
    if (sid !== null && valid.has(sid)) return false;
    if (p === '/' && o.issue) {
      const fresh = randomBytes(8).toString('hex');
      issued.push(fresh);
      valid.add(fresh);
      // Beside it a cookie for another path: several Set-Cookie headers, kept apart.
      res.setHeader('set-cookie', [`sid=${fresh}; Path=/; HttpOnly`, 'seen=1; Path=/nowhere; Expires=Wed, 21 Oct 2037 07:28:00 GMT']);
      return false;
    }
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('members only\n');
    return true;
  };
  return { spec: { host, pages: 30, fanOut: 3, seed: 11, handler }, seen, issued };
}

describe('a site that requires the session cookie it sets on its home page', () => {
  let h: Harness;
  /**
   * The crawl whose worker is killed: started first, its worker killed
   * after 8 pages and another started in its place. The host's session
   * comes back only once its workflow task has timed out (about 10 s);
   * the next tests' crawls run on the new worker meanwhile.
   */
  let crash: { site: ReturnType<typeof membersSite>; seed: string; handle: CampaignHandle; killedAfter: number };
  beforeAll(async () => {
    h = await createHarness('cookies', { workers: 1 });
    const site = membersSite('www.crash.members.test', { issue: true });
    // 16 pages still to fetch after the kill: 1.6 s at the host's delay, far longer than the kill takes.
    site.spec.pages = 24;
    h.web.addSite(site.spec);
    const seed = h.web.url('www.crash.members.test', '/');
    const handle = await launch(h, { seeds: [seed], sitemaps: 'off', politeness: { minDelayMs: 100 } });
    while (pageRequests(h.web.requests()).filter((r) => r.host === 'www.crash.members.test').length < 8) await sleep(50);
    const killedAfter = site.seen.length;
    await h.pool.kill9(h.pool.alive()[0]);
    await h.pool.startOne();
    crash = { site, seed, handle, killedAfter };
  });
  afterAll(() => h?.close());

  test('crawled with the defaults, every page is fetched with 200, each request sending the cookie', async () => {
    const site = membersSite('www.members.test', { issue: true });
    h.web.addSite(site.spec);
    const seed = h.web.url('www.members.test', '/');
    const handle = await launch(h, { seeds: [seed], sitemaps: 'off', politeness: { minDelayMs: 50 } });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const index = await outputOf(h, result.campaignId).index();
    const expected = h.web.expectedPages([seed]);
    expect(new Set(index.map((e) => e.url))).toEqual(expected);
    expect(index.filter((e) => e.status !== 200).map((e) => `${e.status} ${e.url}`)).toEqual([]);
    // One session for the whole crawl, sent by every request after the home page.
    expect(site.issued).toHaveLength(1);
    expect(site.seen.filter((s) => s.path !== '/').every((s) => s.sid === site.issued[0])).toBe(true);
    // The Cookie header went with the request's own headers: the WARC request records have it (its value is the redaction's business).
    const requests = (await outputOf(h, result.campaignId).warc()).filter((r) => r.type === 'request' && r.targetUri !== seed);
    expect(requests.length).toBe(expected.size - 1);
    expect(requests.every((r) => r.httpHeaders?.cookie !== undefined)).toBe(true);
  });

  test('with --cookies off, every page but the home page answers 403', async () => {
    const site = membersSite('www.anonymous.test', { issue: true });
    h.web.addSite(site.spec);
    const seed = h.web.url('www.anonymous.test', '/');
    const handle = await launch(h, { seeds: [seed], sitemaps: 'off', cookies: 'off', politeness: { minDelayMs: 50 } });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const index = await outputOf(h, result.campaignId).index();
    expect(index.find((e) => e.url === seed)?.status).toBe(200);
    const others = index.filter((e) => e.url !== seed);
    expect(others.length).toBeGreaterThan(0);
    expect(others.every((e) => e.status === 403)).toBe(true);
    expect(site.seen.every((s) => s.sid === null)).toBe(true);
  });

  test('a crawl that starts from a cookies.txt is let in everywhere, home page included', async () => {
    const session = randomBytes(8).toString('hex');
    const site = membersSite('www.logged-in.test', { issue: false, accepted: [session] });
    h.web.addSite(site.spec);
    const file = path.join(h.outDir, 'cookies.txt');
    await writeFile(file, `# Netscape HTTP Cookie File\n#HttpOnly_.logged-in.test\tTRUE\t/\tFALSE\t0\tsid\t${session}\n`, { mode: 0o600 });
    const seed = h.web.url('www.logged-in.test', '/');
    const handle = await launch(h, { seeds: [seed], sitemaps: 'off', cookiesFile: file, politeness: { minDelayMs: 50 } });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const index = await outputOf(h, result.campaignId).index();
    expect(new Set(index.map((e) => e.url))).toEqual(h.web.expectedPages([seed]));
    expect(index.filter((e) => e.status !== 200).map((e) => `${e.status} ${e.url}`)).toEqual([]);
    expect(site.seen.every((s) => s.sid === session)).toBe(true);
  });

  test('kill -9 of the worker mid-crawl: the session resumed on another worker sends the same cookie', async () => {
    const { site, seed, handle, killedAfter } = crash;
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const after = site.seen.slice(killedAfter);
    expect(after.length).toBeGreaterThan(0);
    // No new session: the worker that took over found the cookie in Redis.
    expect(site.issued).toHaveLength(1);
    expect(after.filter((s) => s.path !== '/').every((s) => s.sid === site.issued[0])).toBe(true);
    const index = await outputOf(h, result.campaignId).index();
    expect(new Set(index.map((e) => e.url))).toEqual(h.web.expectedPages([seed]));
    expect(index.filter((e) => e.status !== 200).map((e) => `${e.status} ${e.url}`)).toEqual([]);
  });

  test('a campaign started with a cookies file anyone may read, or with a malformed line, fails as InvalidCampaignInput before any request', async () => {
    const open = path.join(h.outDir, 'open-cookies.txt');
    await writeFile(open, '.refused.test\tTRUE\t/\tFALSE\t0\tsid\ts3cret\n');
    await chmod(open, 0o644);
    const bad = path.join(h.outDir, 'bad-cookies.txt');
    await writeFile(bad, '# exported\n.refused.test\tTRUE\t/\tFALSE\t0\tsid s3cret\n', { mode: 0o600 });
    const before = h.web.requests().length;
    for (const [file, message] of [
      [open, 'may be read by anyone'],
      [bad, `cookies file ${bad} line 2: the name (field 6)`],
    ]) {
      const handle = await launch(h, { seeds: [h.web.url('www.members.test', '/')], cookiesFile: file });
      const err = await handle.result().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const cause = (err as WorkflowFailedError).cause as { type?: string; message?: string; cause?: { type?: string; message?: string } };
      const failure = cause?.type ? cause : cause?.cause;
      expect(failure).toMatchObject({ type: 'InvalidCampaignInput', message: expect.stringContaining(message) });
      expect(failure?.message).not.toContain('s3cret');
    }
    expect(h.web.requests().length).toBe(before);
  });
});
