// Opens a heapconv HTML report in headless Chromium (driven by playwright-core) and acts on it as a
// person would; prints what the page showed as one JSON object on stdout, for tests/it/html.rs to
// assert on. Usage: node check_report.mjs REPORT.html '{"search": "re", "click": "frame", ...}'
//
// Scenario keys (all optional): search (text typed in the search box), click (a frame name to
// click, to zoom), sort (a table column key whose header is clicked), row (index of a table row to
// click after sorting), screenshot (a PNG path), width/height (viewport), icicle (a frame name
// whose place is read before and after the icicle button is pressed), type (a sample type index
// chosen), tab (a table tab clicked first: function, mapping or stack), dump (index of a dump of
// a timeline clicked after the rest), search2 (a second search, after the dump is chosen).
// playwright-core comes from PLAYWRIGHT_CORE (a path to its package), installed by
// .ci/install-oracles.sh; the browser is CHROMIUM (default /usr/bin/chromium).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const [report, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText || '{}');
const profileDir = mkdtempSync(join(tmpdir(), 'heapconv-chromium-'));
const out = { errors: [], requests: [] };
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: scenario.width || 1200, height: scenario.height || 800 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.errors.push(`console.${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => out.errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) out.requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto(pathToFileURL(resolve(report)).href, { waitUntil: 'load', timeout: 60000 });
  await page.waitForSelector('body[data-ready]', { timeout: 60000 });
  out.wallMs = Date.now() - t0;
  out.readyMs = Number(await page.getAttribute('body', 'data-ready'));
  out.title = await page.title();
  out.heading = await page.textContent('#hc-title');
  out.totals = await page.textContent('#hc-totals');
  out.pruned = await page.textContent('#hc-pruned');
  out.loss = await page.$eval('#hc-loss', (e) => e.textContent).catch(() => null);
  out.symbols = await page.$eval('#hc-symbols', (e) => e.textContent).catch(() => null);
  out.types = await page.$$eval('#hc-type option', (os) => os.map((o) => o.textContent));
  out.initial = await page.evaluate(() => window.heapconvReport.state());
  out.tabs = await page.$$eval('#hc-tabs button', (bs) => bs.filter((b) => !b.hidden).map((b) => b.getAttribute('data-by')));
  if (scenario.timings) {
    // In-page milliseconds of a search (with redraw), a zoom, a reset and a sample-type switch.
    out.timings = await page.evaluate(() => {
      const t = {}, c = document.getElementById('hc-canvas'), s = document.getElementById('hc-search');
      let t0 = performance.now();
      s.value = 'malloc'; s.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
      t.search = performance.now() - t0;
      const b = c.getBoundingClientRect();
      t0 = performance.now();
      c.dispatchEvent(new MouseEvent('click', { clientX: b.left + b.width / 2, clientY: b.bottom - 30 }));
      t.zoom = performance.now() - t0;
      t0 = performance.now();
      document.getElementById('hc-reset').click();
      t.reset = performance.now() - t0;
      const sel = document.getElementById('hc-type');
      t0 = performance.now();
      sel.value = '0'; sel.dispatchEvent(new Event('change'));
      t.switchType = performance.now() - t0;
      return t;
    });
  }
  if (scenario.search !== undefined) {
    await page.fill('#hc-search', scenario.search);
    await page.press('#hc-search', 'Enter');
    out.search = await page.evaluate(() => ({ state: window.heapconvReport.state(), highlighted: window.heapconvReport.highlighted() }));
    // The highlighted frames are drawn in the highlight colour: read a pixel of the first.
    if (out.search.highlighted.length) {
      const name = out.search.highlighted[0];
      out.search.pixel = await page.evaluate((n) => {
        const r = window.heapconvReport.frameRect(n), c = document.getElementById('hc-canvas');
        const b = c.getBoundingClientRect(), k = c.width / b.width;
        const px = c.getContext('2d').getImageData(Math.floor((r.x - window.scrollX - b.left + 1) * k), Math.floor((r.y - window.scrollY - b.top + r.h / 2) * k), 1, 1).data;
        return [px[0], px[1], px[2]];
      }, name);
    }
  }
  if (scenario.click !== undefined) {
    const r = await page.evaluate((n) => window.heapconvReport.frameRect(n), scenario.click);
    out.clickBefore = r;
    if (r) {
      await page.mouse.move(r.x + Math.min(r.w / 2, 20), r.y + r.h / 2);
      out.tooltip = await page.textContent('#hc-tip');
      await page.mouse.click(r.x + Math.min(r.w / 2, 20), r.y + r.h / 2);
      out.clickAfter = { state: await page.evaluate(() => window.heapconvReport.state()), rect: await page.evaluate((n) => window.heapconvReport.frameRect(n), scenario.click) };
    }
  }
  if (scenario.icicle) {
    const rect = () => page.evaluate((n) => window.heapconvReport.frameRect(n), scenario.icicle);
    const canvasTop = await page.evaluate(() => document.getElementById('hc-canvas').getBoundingClientRect().top + window.scrollY);
    const before = await rect();
    await page.click('#hc-icicle');
    out.icicle = { canvasTop, before, after: await rect(), state: await page.evaluate(() => window.heapconvReport.state()), pressed: await page.getAttribute('#hc-icicle', 'aria-pressed') };
    await page.click('#hc-icicle');
    out.icicle.back = await rect();
  }
  if (scenario.tab !== undefined) {
    await page.click(`#hc-tabs button[data-by="${scenario.tab}"]`);
  }
  const firstColumn = () => page.$$eval('#hc-table tbody tr', (rows) => rows.slice(0, 10).map((r) => [...r.children].map((td) => td.textContent)));
  out.table = { initial: await firstColumn(), headers: await page.$$eval('#hc-table th', (t) => t.map((h) => h.getAttribute('data-key'))) };
  if (scenario.sort !== undefined) {
    await page.click(`#hc-table th[data-key="${scenario.sort}"]`);
    out.table.sorted = await firstColumn();
    out.table.sortedClass = await page.getAttribute(`#hc-table th[data-key="${scenario.sort}"]`, 'class');
    await page.click(`#hc-table th[data-key="${scenario.sort}"]`);
    out.table.reversed = await firstColumn();
  }
  if (scenario.row !== undefined) {
    await page.click(`#hc-table tbody tr:nth-child(${scenario.row + 1})`);
    out.row = await page.evaluate(() => ({ state: window.heapconvReport.state(), highlighted: window.heapconvReport.highlighted() }));
    out.row.path = await page.$$eval('#hc-path-steps li', (ls) => ls.map((l) => l.textContent));
    out.row.pathNote = await page.$eval('#hc-path', (e) => (e.hidden ? null : e.textContent)).catch(() => null);
  }
  if (scenario.type !== undefined) {
    await page.selectOption('#hc-type', String(scenario.type));
    out.afterType = await page.evaluate(() => window.heapconvReport.state());
    out.afterType.table = await firstColumn();
    out.afterType.match = await page.textContent('#hc-match');
  }
  out.timeline = await page.evaluate(() => window.heapconvReport.timeline());
  if (scenario.dump !== undefined) {
    out.timelineBars = await page.$$eval('#hc-timeline-chart g.dump', (gs) => gs.length);
    await page.click(`#hc-timeline-chart g[data-dump="${scenario.dump}"] rect.hit`);
    out.afterDump = { state: await page.evaluate(() => window.heapconvReport.state()), timeline: await page.evaluate(() => window.heapconvReport.timeline()), table: await firstColumn(), heading: await page.textContent('#hc-title'), totals: await page.textContent('#hc-totals') };
  }
  if (scenario.search2 !== undefined) {
    await page.fill('#hc-search', scenario.search2);
    await page.press('#hc-search', 'Enter');
    out.search2 = await page.evaluate(() => ({ state: window.heapconvReport.state(), highlighted: window.heapconvReport.highlighted() }));
  }
  if (scenario.screenshot) {
    await page.click('#hc-reset');
    await page.screenshot({ path: scenario.screenshot, fullPage: false });
  }
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');
