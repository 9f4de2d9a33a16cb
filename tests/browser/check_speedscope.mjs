// Opens a heapconv `--to speedscope` file in the real speedscope web app (the npm package
// `speedscope`, its dist/release served from disk) in headless Chromium driven by
// playwright-core; prints what the app showed as one JSON object on stdout, for
// tests/it/viewer_formats.rs to assert on.
// Usage: node check_speedscope.mjs SPEEDSCOPE_DIST_DIR PROFILE.json
//
// The app needs an http(s) page to load `#profileURL=`; every request to the made-up origin
// below is answered from SPEEDSCOPE_DIST_DIR (and the profile), any other request is aborted
// and reported. The app is opened in its sandwich view, whose table lists the frames in the DOM.
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const [dist, profile] = process.argv.slice(2);
const origin = 'http://speedscope.heapconv.invalid';
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.ico': 'image/x-icon', '.wasm': 'application/wasm', '.woff2': 'font/woff2', '.txt': 'text/plain' };
const out = { errors: [], requests: [] };
const profileDir = mkdtempSync(join(tmpdir(), 'heapconv-chromium-'));
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1200, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== origin) {
      out.requests.push(url.href);
      return route.abort();
    }
    const path = url.pathname === '/profile.json' ? resolve(profile) : join(resolve(dist), url.pathname);
    try {
      await route.fulfill({ status: 200, contentType: types[extname(path)] || 'application/octet-stream',
        body: readFileSync(path) });
    } catch (e) {
      out.requests.push(`${url.href} (${e.code || e.message})`);
      await route.fulfill({ status: 404, body: '' });
    }
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.errors.push(`console.error: ${m.text()}`); });
  page.on('pageerror', (e) => out.errors.push(`pageerror: ${e.message}`));
  page.on('dialog', async (d) => { out.errors.push(`dialog: ${d.message()}`); await d.dismiss(); });
  const t0 = Date.now();
  await page.goto(`${origin}/index.html#profileURL=${encodeURIComponent(`${origin}/profile.json`)}&view=sandwich`,
    { waitUntil: 'load', timeout: 60000 });
  // The app names the document after the profile once it is imported.
  await page.waitForFunction(() => document.title !== 'speedscope', null, { timeout: 60000 });
  out.title = await page.title();
  // The sandwich view's table: its rows' text, once drawn.
  await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), null, { timeout: 30000 })
    .catch(() => {});
  out.wallMs = Date.now() - t0;
  out.text = await page.evaluate(() => document.body.innerText);
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
