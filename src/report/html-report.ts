// Pure: report figures → one self-contained HTML page. No scripts run, and
// nothing is loaded from anywhere: CSS is inline, charts are SVG drawn here.
// Every string from the index is hostile (URLs, hosts, content types, error
// codes) and goes through esc(); URLs are shown as text, never as links.
// Each figure carries its number in a data-* attribute, and the whole
// ReportData is embedded as JSON, so a browser test can check the page.
import type { HostRow, ReportData } from './report-data';

export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON that cannot end its <script> element or open a comment inside it. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const int = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${int(v)} B` : `${v.toFixed(1)} ${units[u]}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h} h ${m} min` : `${m} min ${s % 60} s`;
}

const clip = (s: string, max = 60) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);
const pct = (v: number, max: number) => (max > 0 ? ((100 * v) / max).toFixed(1) : '0.0');
const attrs = (a: Record<string, string | number | null>) =>
  Object.entries(a)
    .map(([k, v]) => ` data-${k}="${esc(v ?? '')}"`)
    .join('');

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:24px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.muted{color:#656d76}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px;margin:16px 0}
.figure{border:1px solid #d0d7de;border-radius:6px;padding:10px 12px}.figure b{display:block;font-size:22px}
.figure span{color:#656d76;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.bar{width:30%}td.bar span{display:block;height:10px;border-radius:2px;background:#0969da}td.bar.err span{background:#cf222e}
td.url{word-break:break-all;font-family:ui-monospace,monospace;font-size:12px}
svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#1f2328}
.fetched{fill:#0969da}.failed{fill:#cf222e}.skipped{fill:#bf8700}.axis{stroke:#8c959f}.hit{fill:transparent}.hit:hover{fill:rgba(0,0,0,.06)}
.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;border-radius:2px}
`;

function section(id: string, title: string, body: string, note = ''): string {
  return `<section id="${id}"><h2>${esc(title)}</h2>${note ? `<p class="muted">${esc(note)}</p>` : ''}${body}</section>\n`;
}

const empty = (what: string) => `<p class="muted">No ${esc(what)}.</p>`;

function summaryFigures(d: ReportData): string {
  const s = d.summary;
  const fig = (key: string, label: string, value: number, shown: string) =>
    `<div class="figure" data-figure="${key}" data-value="${value}"><b>${esc(shown)}</b><span>${esc(label)}</span></div>`;
  return `<div class="grid" id="summary">${[
    fig('pages-fetched', 'pages fetched', s.fetched, int(s.fetched)),
    fig('pages-failed', 'failed', s.failed, int(s.failed)),
    fig('pages-skipped', 'skipped', s.skipped, int(s.skipped)),
    fig('embeds-fetched', 'embeds fetched', s.embeds, int(s.embeds)),
    fig('embeds-failed', 'embeds failed', s.embedsFailed, int(s.embedsFailed)),
    fig('bytes', 'bytes stored', s.bytes, formatBytes(s.bytes)),
    fig('duration-ms', 'duration', s.durationMs, formatDuration(s.durationMs)),
    fig('hosts', 'distinct hosts', s.hosts, int(s.hosts)),
    fig('entries', 'index entries', s.entries, int(s.entries)),
    fig('revisits', 'revisit records', s.revisits, int(s.revisits)),
    fig('revisit-bytes', 'payload not stored again', s.revisitBytes, formatBytes(s.revisitBytes)),
    // Only where pages were rendered (render: browser or auto): their count and their share of the HTML pages.
    ...(s.rendered > 0
      ? [
          fig('rendered', 'pages rendered in a browser', s.rendered, int(s.rendered)),
          fig('rendered-share', 'of the HTML pages rendered', s.htmlPages ? s.rendered / s.htmlPages : 0, `${((s.rendered / Math.max(1, s.htmlPages)) * 100).toFixed(1)} %`),
        ]
      : []),
  ].join('')}</div>`;
}

/** Fetches per bucket: fetched as an area, failed and skipped as lines. */
function timelineChart(d: ReportData): string {
  const { buckets, bucketMs } = d.timeline;
  if (buckets.length === 0) return empty('dated entries');
  const W = 900,
    H = 220,
    L = 44,
    R = 10,
    T = 10,
    B = 28;
  const max = Math.max(1, ...buckets.map((b) => Math.max(b.fetched, b.failed, b.skipped)));
  const step = (W - L - R) / buckets.length;
  const x = (i: number) => L + step * (i + 0.5);
  const y = (v: number) => T + (H - T - B) * (1 - v / max);
  const line = (k: 'fetched' | 'failed' | 'skipped') => buckets.map((b, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(b[k]).toFixed(1)}`).join('');
  const area = `${line('fetched')}L${x(buckets.length - 1).toFixed(1)},${y(0)}L${x(0).toFixed(1)},${y(0)}Z`;
  const hits = buckets
    .map(
      (b, i) =>
        `<rect class="hit"${attrs({ start: b.start, fetched: b.fetched, failed: b.failed, skipped: b.skipped })} x="${(L + step * i).toFixed(1)}" y="${T}" width="${step.toFixed(1)}" height="${H - T - B}">` +
        `<title>${esc(`${b.start}: ${b.fetched} fetched, ${b.failed} failed, ${b.skipped} skipped`)}</title></rect>`,
    )
    .join('');
  const hhmmss = (iso: string) => iso.slice(11, 19);
  return `<p class="legend muted">bucket ${esc(formatDuration(bucketMs))}<i style="background:#0969da"></i>fetched<i style="background:#cf222e"></i>failed<i style="background:#bf8700"></i>skipped</p>
<svg id="chart-timeline" data-bucket-ms="${bucketMs}" viewBox="0 0 ${W} ${H}" role="img" aria-label="entries per time bucket">
<line class="axis" x1="${L}" y1="${y(0)}" x2="${W - R}" y2="${y(0)}"/><line class="axis" x1="${L}" y1="${T}" x2="${L}" y2="${y(0)}"/>
<text x="${L - 4}" y="${T + 8}" text-anchor="end">${max}</text><text x="${L - 4}" y="${y(0)}" text-anchor="end">0</text>
<text x="${L}" y="${H - 8}">${esc(hhmmss(buckets[0]!.start))} UTC</text><text x="${W - R}" y="${H - 8}" text-anchor="end">${esc(hhmmss(buckets[buckets.length - 1]!.start))}</text>
<path data-series="fetched" d="${area}" fill="#0969da" fill-opacity=".25" stroke="#0969da" stroke-width="1.5"/>
<path data-series="failed" d="${line('failed')}" fill="none" stroke="#cf222e" stroke-width="1.5"/>
<path data-series="skipped" d="${line('skipped')}" fill="none" stroke="#bf8700" stroke-width="1.5" stroke-dasharray="4 3"/>
${hits}</svg>`;
}

/** Horizontal bars, one per row, each with its key and count as data attributes. */
/** Revisit campaigns: changed vs unchanged revisits per time bucket, stacked bars. */
function changeRateChart(d: ReportData): string {
  const c = d.changeRate!;
  const W = 900,
    H = 200,
    L = 44,
    R = 10,
    T = 10,
    B = 28;
  const max = Math.max(1, ...c.buckets.map((b) => b.changed + b.unchanged));
  const step = (W - L - R) / c.buckets.length;
  const h = (v: number) => ((H - T - B) * v) / max;
  const bars = c.buckets
    .map((b, i) => {
      const x = (L + step * i + step * 0.1).toFixed(1);
      const w = (step * 0.8).toFixed(1);
      const base = H - B;
      return (
        `<g class="bucket"${attrs({ start: b.start, changed: b.changed, unchanged: b.unchanged })}><title>${esc(`${b.start}: ${b.changed} changed, ${b.unchanged} unchanged`)}</title>` +
        `<rect x="${x}" y="${(base - h(b.unchanged)).toFixed(1)}" width="${w}" height="${h(b.unchanged).toFixed(1)}" fill="#8c959f"/>` +
        `<rect x="${x}" y="${(base - h(b.unchanged) - h(b.changed)).toFixed(1)}" width="${w}" height="${h(b.changed).toFixed(1)}" fill="#bf3989"/></g>`
      );
    })
    .join('');
  const total = c.buckets.reduce((n, b) => n + b.changed + b.unchanged, 0);
  const changed = c.buckets.reduce((n, b) => n + b.changed, 0);
  return `<p class="legend muted">bucket ${esc(formatDuration(c.bucketMs))}; ${changed} of ${total} revisits found a change<i style="background:#bf3989"></i>changed<i style="background:#8c959f"></i>unchanged</p>
<svg id="chart-change-rate" viewBox="0 0 ${W} ${H}" role="img" aria-label="changed and unchanged revisits per time bucket">
<line class="axis" x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}"/><text x="${L - 4}" y="${T + 8}" text-anchor="end">${max}</text><text x="${L - 4}" y="${H - B}" text-anchor="end">0</text>
${bars}</svg>`;
}

function barChart(id: string, rows: { key: string; count: number }[]): string {
  if (rows.length === 0) return empty('data');
  const W = 700,
    LABEL = 220,
    ROW = 22,
    max = Math.max(...rows.map((r) => r.count));
  const bars = rows.map((r, i) => {
    const w = ((W - LABEL - 60) * r.count) / max;
    const yy = i * ROW;
    return (
      `<g${attrs({ key: r.key, count: r.count })}><title>${esc(`${r.key}: ${r.count}`)}</title>` +
      `<text x="${LABEL - 6}" y="${yy + 15}" text-anchor="end">${esc(clip(r.key, 34))}</text>` +
      `<rect class="fetched" x="${LABEL}" y="${yy + 4}" width="${w.toFixed(1)}" height="${ROW - 8}" rx="2"/>` +
      `<text x="${(LABEL + w + 6).toFixed(1)}" y="${yy + 15}">${int(r.count)}</text></g>`
    );
  });
  return `<svg id="${id}" viewBox="0 0 ${W} ${rows.length * ROW}" role="img">${bars.join('')}</svg>`;
}

function hostTable(id: string, rows: HostRow[], by: 'fetched' | 'errors'): string {
  if (rows.length === 0) return empty(by === 'errors' ? 'hosts with errors' : 'hosts');
  const max = Math.max(...rows.map((r) => r[by]));
  const body = rows.map(
    (r) =>
      `<tr${attrs({ host: r.host, fetched: r.fetched, failed: r.failed, skipped: r.skipped, embeds: r.embeds, 'http-errors': r.httpErrors, errors: r.errors, bytes: r.bytes })}>` +
      `<td title="${esc(r.host)}">${esc(clip(r.host))}</td><td class="n">${int(r.fetched)}</td><td class="n">${int(r.failed)}</td>` +
      `<td class="n">${int(r.httpErrors)}</td><td class="n">${int(r.skipped)}</td><td class="n">${int(r.embeds)}</td><td class="n">${esc(formatBytes(r.bytes))}</td>` +
      `<td class="bar${by === 'errors' ? ' err' : ''}"><span style="width:${pct(r[by], max)}%"></span></td></tr>`,
  );
  return `<table id="${id}"><thead><tr><th>host</th><th>fetched</th><th>failed</th><th>HTTP ≥ 400</th><th>skipped</th><th>embeds</th><th>bytes</th><th>${by}</th></tr></thead><tbody>${body.join('')}</tbody></table>`;
}

function problemTable(d: ReportData): string {
  if (d.problems.length === 0) return empty('failures, skips or HTTP errors');
  const max = Math.max(...d.problems.map((p) => p.count));
  const body = d.problems.map(
    (p) =>
      `<tr${attrs({ outcome: p.outcome, code: p.code, count: p.count })}><td>${esc(p.outcome)}</td><td>${esc(p.code ?? '—')}</td>` +
      `<td class="n">${int(p.count)}</td><td class="bar err"><span style="width:${pct(p.count, max)}%"></span></td><td class="url">${esc(clip(p.exampleUrl, 200))}</td></tr>`,
  );
  return `<table id="table-problems"><thead><tr><th>outcome</th><th>code</th><th>count</th><th></th><th>example URL</th></tr></thead><tbody>${body.join('')}</tbody></table>`;
}

/** Median wait as a bar, minimum wait as a tick, per host. */
function politeness(d: ReportData): string {
  const { rows, omittedHosts } = d.politeness;
  if (rows.length === 0) return empty('hosts with two or more responses');
  const W = 700,
    LABEL = 220,
    ROW = 18,
    max = Math.max(1, ...rows.map((r) => r.medianMs));
  const sx = (v: number) => LABEL + ((W - LABEL - 80) * Math.min(v, max)) / max;
  const chart = rows.map((r, i) => {
    const yy = i * ROW;
    return (
      `<g${attrs({ host: r.host, 'min-ms': r.minMs, 'median-ms': r.medianMs })}><title>${esc(`${r.host}: median ${r.medianMs} ms, min ${r.minMs} ms`)}</title>` +
      `<text x="${LABEL - 6}" y="${yy + 13}" text-anchor="end">${esc(clip(r.host, 34))}</text>` +
      `<rect class="fetched" x="${LABEL}" y="${yy + 4}" width="${(sx(r.medianMs) - LABEL).toFixed(1)}" height="${ROW - 8}" fill-opacity=".6"/>` +
      `<line x1="${sx(r.minMs).toFixed(1)}" x2="${sx(r.minMs).toFixed(1)}" y1="${yy + 1}" y2="${yy + ROW - 1}" stroke="#cf222e" stroke-width="2"/>` +
      `<text x="${(sx(r.medianMs) + 6).toFixed(1)}" y="${yy + 13}">${esc(formatDuration(r.medianMs))}</text></g>`
    );
  });
  const table = rows.map(
    (r) =>
      `<tr${attrs({ host: r.host, requests: r.requests, 'min-ms': r.minMs, 'median-ms': r.medianMs })}><td title="${esc(r.host)}">${esc(clip(r.host))}</td>` +
      `<td class="n">${int(r.requests)}</td><td class="n">${int(r.minMs)} ms</td><td class="n">${int(r.medianMs)} ms</td></tr>`,
  );
  return (
    `<p class="legend muted">bar: median wait<i style="background:#cf222e"></i>minimum wait</p>` +
    `<svg id="chart-politeness" viewBox="0 0 ${W} ${rows.length * ROW}" role="img">${chart.join('')}</svg>` +
    `<table id="table-politeness"><thead><tr><th>host</th><th>requests</th><th>min wait</th><th>median wait</th></tr></thead><tbody>${table.join('')}</tbody></table>` +
    (omittedHosts ? `<p class="muted" data-omitted-hosts="${omittedHosts}">${int(omittedHosts)} more hosts with longer waits not shown.</p>` : '')
  );
}

/** The newest `crawler qa` pass: its score, the pages it replayed worst, and what their replays missed. */
function qaSection(d: ReportData): string {
  const q = d.qa!;
  const fig = (v: number | null) => (v === null ? '—' : v.toFixed(3));
  const figure = (key: string, label: string, value: number | string) =>
    `<div class="figure" data-figure="${key}" data-value="${esc(value)}"><b>${esc(value)}</b><span>${esc(label)}</span></div>`;
  const figures = `<div class="grid" id="qa-summary">${[
    figure('qa-score', 'campaign score', fig(q.score)),
    figure('qa-pages', 'pages replayed', q.pages),
    figure('qa-screenshots', 'screenshots compared', q.screenshots),
    figure('qa-texts', 'texts compared', q.texts),
    figure('qa-failed', 'pages not replayed', q.failed),
    figure('qa-missing', 'URLs missing from the archive', q.missing.length + q.moreMissing),
  ].join('')}</div>`;
  const worst = q.worst.length
    ? `<table id="table-qa-worst"><thead><tr><th>score</th><th>screenshot</th><th>text</th><th>resources</th><th>page</th><th>what broke it</th></tr></thead><tbody>${q.worst
        .map(
          (p) =>
            `<tr${attrs({ url: p.url, score: p.score, screenshot: p.screenshot, text: p.text, resources: p.resources, missing: p.missing.length })}>` +
            `<td class="n">${fig(p.score)}</td><td class="n">${fig(p.screenshot)}</td><td class="n">${fig(p.text)}</td><td class="n">${fig(p.resources)}</td>` +
            `<td class="url">${esc(clip(p.url, 200))}</td><td class="url">${esc(clip(p.error ?? p.missing.map((m) => m.url).join(' '), 400))}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : empty('pages replayed');
  const missing = q.missing.length
    ? `<table id="table-qa-missing"><thead><tr><th>missing URL</th><th>pages it breaks</th><th>e.g.</th></tr></thead><tbody>${q.missing
        .map(
          (m) =>
            `<tr${attrs({ url: m.url, pages: m.pages.length })}><td class="url">${esc(clip(m.url, 200))}</td><td class="n">${int(m.pages.length)}</td><td class="url">${esc(clip(m.pages[0] ?? '', 200))}</td></tr>`,
        )
        .join('')}</tbody></table>${q.moreMissing ? `<p class="muted">${int(q.moreMissing)} more missing URLs in the QA report.</p>` : ''}`
    : empty('requests the archive could not answer');
  return `${figures}<h3>Lowest-scoring pages</h3>${worst}<h3>Missing from the archive</h3>${missing}`;
}

export function renderReportHtml(d: ReportData): string {
  const s = d.summary;
  const span = s.firstAt && s.lastAt ? `${s.firstAt} – ${s.lastAt}` : 'no dated entries';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Crawl report: ${esc(d.campaignId)}</title><style>${CSS}</style></head>
<body data-campaign="${esc(d.campaignId)}">
<h1>Crawl report: <span id="campaign-id">${esc(d.campaignId)}</span></h1>
<p class="muted">${esc(span)} · generated ${esc(d.generatedAt)}</p>
${summaryFigures(d)}
${section('timeline', 'Entries over time', timelineChart(d))}${d.changeRate ? section('change-rate', 'Change rate of revisits', changeRateChart(d), 'a revisit is changed when its payload differs beyond the SimHash distance, unchanged on a 304 or the same payload') : ''}${section(
    'status-codes',
    'Status codes',
    barChart(
      'chart-status-codes',
      d.statusCodes.map((r) => ({ key: String(r.status), count: r.count })),
    ),
    'responses only',
  )}${section(
    'content-types',
    'Content types',
    barChart(
      'chart-content-types',
      d.contentTypes.map((r) => ({ key: r.type, count: r.count })),
    ),
    'responses only, by media type',
  )}${section('top-hosts-pages', 'Top hosts by pages', hostTable('table-top-hosts-pages', d.topHostsByPages, 'fetched'))}${section('top-hosts-errors', 'Top hosts by errors', hostTable('table-top-hosts-errors', d.topHostsByErrors, 'errors'), 'errors = failed URLs and responses with status ≥ 400, each URL counted once')}${section('problems', 'Errors and outcomes', problemTable(d), 'every entry that is not a successful fetch, by outcome and code')}${section('politeness', 'Politeness: waits between requests to a host', politeness(d), 'gaps between the starts of consecutive requests that got a response; shortest minimum first')}${d.qa ? section('qa', 'Quality assurance: the archive replayed', qaSection(d), `crawler qa, ${d.qa.generatedAt} (${d.qa.file}): each page replayed by pywb in Chromium and compared with the crawl; a page scores the mean of its screenshot and text similarity and the share of its requests the archive answered`) : ''}<script type="application/json" id="report-data">${jsonForScript(d)}</script>
</body></html>
`;
}
