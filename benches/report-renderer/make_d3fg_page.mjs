// Writes one self-contained HTML page drawing a folded-stacks file with the npm library
// d3-flame-graph (its standalone bundle dist/d3-flamegraph.min.js and .css, inlined), for the
// "Report renderer: own vs npm library" figures in BENCHMARKS.md.
// Usage: node make_d3fg_page.mjs FOLDED PRUNE_PCT LIB_DIST_DIR D3_SELECTION_MIN_JS MIN_FRAME_PX OUT.html
// (d3-flame-graph's bundle holds its d3 modules but exposes only flamegraph(); the page selects
// its container with d3-selection's own bundle, as the library's README does with d3.)
//
// The tree is pruned as heapconv's report prunes (one sample type): a node whose cumulative
// value is below PRUNE_PCT percent of the total is merged with its pruned siblings into one
// `[other]` child of its parent. The page marks body[data-ready] with performance.now() once
// the chart has been built (script time) and body[data-painted] two animation frames later.
import { readFileSync, writeFileSync, createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';

const [folded, pctText, dist, selection, minFrameText, out] = process.argv.slice(2);
const pct = Number(pctText);
const root = { name: 'all', value: 0, kids: new Map() };
const lines = createInterface({ input: createReadStream(folded), crlfDelay: Infinity });
for await (const line of lines) {
  const sp = line.lastIndexOf(' ');
  if (sp < 0) continue;
  const v = Number(line.slice(sp + 1));
  let n = root;
  n.value += v;
  for (const f of line.slice(0, sp).split(';')) {
    let c = n.kids.get(f);
    if (!c) { c = { name: f, value: 0, kids: new Map() }; n.kids.set(f, c); }
    c.value += v;
    n = c;
  }
}
const threshold = root.value * pct / 100;
let nodes = 0, prunedNodes = 0;
const size = (n) => { let s = 1; for (const c of n.kids.values()) s += size(c); return s; };
function emit(n) {
  nodes++;
  const o = { name: n.name, value: n.value };
  const children = [];
  let other = 0;
  for (const c of n.kids.values()) {
    if (c.value < threshold) { other += c.value; prunedNodes += size(c); } else children.push(emit(c));
  }
  if (other > 0) { nodes++; children.push({ name: '[other]', value: other }); }
  if (children.length) o.children = children;
  return o;
}
const tree = emit(root);
const lib = readFileSync(join(dist, 'd3-flamegraph.min.js'), 'utf8');
const css = readFileSync(join(dist, 'd3-flamegraph.css'), 'utf8');
const sel = readFileSync(selection, 'utf8');
const data = JSON.stringify(tree).replace(/</g, '\\u003c');
writeFileSync(out, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>d3-flame-graph</title>
<style>${css}</style></head><body><div id="chart"></div>
<script>${sel}</script>
<script>${lib}</script>
<script id="data" type="application/json">${data}</script>
<script>
const data = JSON.parse(document.getElementById('data').textContent);
const chart = flamegraph().width(1180).cellHeight(18).transitionDuration(0).minFrameSize(${Number(minFrameText)});
d3.select('#chart').datum(data).call(chart);
window.fgChart = chart;
document.body.dataset.ready = performance.now();
requestAnimationFrame(() => requestAnimationFrame(() => { document.body.dataset.painted = performance.now(); }));
</script></body></html>`);
console.log(JSON.stringify({ out, nodes, prunedNodes, total: root.value, bytes: readFileSync(out).length }));
