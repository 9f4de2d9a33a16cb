// Opens an HTML page in headless Chromium (playwright-core) and prints, as JSON: readyMs
// (performance.now() the page wrote into body[data-ready] when its script had drawn),
// paintedMs (performance.now() two animation frames after that: layout and paint done), wallMs
// (from goto to painted, as the test script sees it), the number of DOM elements and console
// errors. Usage: node measure.mjs PAGE.html [RUNS]; one fresh browser per run.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const [pagePath, runsText] = process.argv.slice(2);
const runs = [];
for (let i = 0; i < Number(runsText || 3); i++) {
  const profileDir = mkdtempSync(join(tmpdir(), 'heapconv-chromium-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1200, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  try {
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(e.message));
    const t0 = Date.now();
    await page.goto(pathToFileURL(resolve(pagePath)).href, { waitUntil: 'load', timeout: 600000 });
    await page.waitForSelector('body[data-ready]', { timeout: 600000 });
    const paintedMs = await page.evaluate(() => new Promise((ok) =>
      requestAnimationFrame(() => requestAnimationFrame(() => ok(performance.now())))));
    const wallMs = Date.now() - t0;
    // A search for `malloc`, a zoom (d3-flame-graph: into the root's largest child; heapconv's
    // report: a click just above its root) and a reset, each until painted (two frames).
    const timings = await page.evaluate(() => new Promise((ok) => {
      const chart = window.fgChart;
      const painted = (f) => new Promise((done) => {
        const t0 = performance.now();
        f();
        requestAnimationFrame(() => requestAnimationFrame(() => done(Math.round(performance.now() - t0))));
      });
      if (window.heapconvReport) {
        // heapconv's report: the same search, a click on the frame above the root, a reset.
        const c = document.getElementById('hc-canvas'), s = document.getElementById('hc-search');
        const b = c.getBoundingClientRect();
        return (async () => {
          const t = {};
          t.search = await painted(() => { s.value = 'malloc'; s.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); });
          t.zoom = await painted(() => c.dispatchEvent(new MouseEvent('click', { clientX: b.left + b.width / 2, clientY: b.bottom - 30 })));
          t.reset = await painted(() => document.getElementById('hc-reset').click());
          ok(t);
        })();
      }
      if (!chart) return ok(null);
      (async () => {
        const t = {};
        t.search = await painted(() => chart.search('malloc'));
        const root = d3.select('#chart').datum();
        const big = root.children.reduce((a, b) => (a.value >= b.value ? a : b));
        t.zoom = await painted(() => chart.zoomTo(big));
        t.reset = await painted(() => chart.resetZoom());
        ok(t);
      })();
    }));
    runs.push({
      readyMs: Math.round(Number(await page.getAttribute('body', 'data-ready'))),
      paintedMs: Math.round(paintedMs),
      wallMs,
      elements: await page.evaluate(() => document.getElementsByTagName('*').length),
      timings,
      errors,
    });
  } finally {
    await context.close();
    rmSync(profileDir, { recursive: true, force: true });
  }
}
process.stdout.write(JSON.stringify(runs) + '\n');
