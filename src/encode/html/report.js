// heapconv HTML report: a flame graph drawn on one canvas, a header and sortable tables, from
// the JSON in #heapconv-data (see src/encode/html.rs for its layout). No library, no network.
(function () {
  'use strict';
  var ALL = JSON.parse(document.getElementById('heapconv-data').textContent);
  // A timeline holds one document per dump; the page shows one of them at a time.
  var TL = ALL.kind === 'timeline' ? ALL : null;
  var D, STR, N, DIFF, T, parent, name, map, depth, size, maxDepth, selfv, cum, fnIndex, mapIndex;
  var OTHER = 1; // string id of "[other]"
  var ROW = 18;

  // ---- the tree -------------------------------------------------------------------------
  function load(doc) {
    D = doc; STR = D.strings; N = D.nodes.parent.length; DIFF = D.kind === 'diff'; T = D.types.length;
    parent = new Int32Array(N); name = Int32Array.from(D.nodes.name); map = Int32Array.from(D.nodes.map);
    depth = new Int32Array(N); size = new Int32Array(N); maxDepth = 0;
    parent[0] = -1;
    for (var i = 1; i < N; i++) {
      parent[i] = i - D.nodes.parent[i];
      depth[i] = depth[parent[i]] + 1;
      if (depth[i] > maxDepth) maxDepth = depth[i];
    }
    for (i = N - 1; i >= 0; i--) { size[i] += 1; if (i > 0) size[parent[i]] += size[i]; }
    // Cumulative values per series (DIFF: BASE's types, then NEW's).
    selfv = []; cum = [];
    for (var s = 0; s < D.nodes.self.length; s++) {
      var sv = Float64Array.from(D.nodes.self[s]), cv = Float64Array.from(sv);
      for (i = N - 1; i > 0; i--) cv[parent[i]] += cv[i];
      selfv.push(sv); cum.push(cv);
    }
    // Exact totals per function and per mapping (made before pruning): string id -> row.
    function index(t) { var ix = new Int32Array(STR.length).fill(-1); t.key.forEach(function (k, j) { ix[k] = j; }); return ix; }
    fnIndex = index(D.functions); mapIndex = index(D.mappings);
    x = new Float64Array(N); w = new Float64Array(N);
  }

  // ---- state ----------------------------------------------------------------------------
  var st = { type: 0, side: 'new', icicle: false, focus: 0, match: null, matchText: '', matchNames: null, by: 'function', sortKey: null, sortAsc: false, selectedRow: null, dump: 0 };
  var x, w;
  function widthSeries() { return DIFF ? (st.side === 'base' ? st.type : T + st.type) : st.type; }
  function layout() {
    var c = cum[widthSeries()], off = new Float64Array(N);
    for (var i = 0; i < N; i++) {
      w[i] = c[i] > 0 ? c[i] : 0;
      if (i === 0) { x[0] = 0; continue; }
      var p = parent[i];
      x[i] = x[p] + off[p];
      off[p] += w[i];
    }
  }

  // ---- formatting -----------------------------------------------------------------------
  function unit() { return D.types[st.type].unit; }
  function grouped(v) { return Math.round(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  function human(v, u) {
    if (u !== 'bytes') return grouped(v) + (u && u !== 'count' ? ' ' + u : '');
    var a = Math.abs(v), sign = v < 0 ? '-' : '';
    var units = [[1073741824, 'GiB'], [1048576, 'MiB'], [1024, 'KiB']];
    for (var k = 0; k < units.length; k++) {
      if (a >= units[k][0]) { var n = a / units[k][0]; return sign + n.toFixed(n >= 100 ? 0 : n >= 10 ? 1 : 2) + ' ' + units[k][1]; }
    }
    return sign + a + ' B';
  }
  function exact(v, u) { return u === 'bytes' ? human(v, u) + ' (' + grouped(v) + ' bytes)' : human(v, u); }
  function pct(a, b) { return b ? (100 * a / b).toFixed(2) + '%' : '-'; }
  function signed(v, u) { return (v > 0 ? '+' : '') + human(v, u); }
  function changePct(b, a) { return b ? ((a - b) * 100 / Math.abs(b) > 0 ? '+' : '') + ((a - b) * 100 / Math.abs(b)).toFixed(2) + '%' : (a ? 'new' : '0.00%'); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function label(i) { return STR[name[i]]; }

  // ---- header ---------------------------------------------------------------------------
  function header() {
    document.getElementById('hc-title').textContent = TL ? TL.title : D.title;
    var facts = document.getElementById('hc-facts'), m = D.meta;
    facts.replaceChildren(); document.getElementById('hc-warnings').replaceChildren();
    function fact(k, v, id) {
      if (v === null || v === undefined || v === '') return;
      var d = el('div'); d.appendChild(el('dt', null, k));
      var dd = el('dd', id ? { id: id } : null, String(v)); d.appendChild(dd); facts.appendChild(d);
    }
    if (DIFF) {
      fact('base', D.base_name + (D.base_meta.describe ? ' (' + D.base_meta.describe + ')' : ''));
      fact('new', D.new_name + (m.describe ? ' (' + m.describe + ')' : ''));
      if (D.normalized) fact('normalized', 'BASE scaled to NEW\u2019s total');
    } else {
      fact('input', m.source);
      fact('process', m.process);
      fact('pid', m.pid);
      fact('heap', m.heap);
      if (!m.title) fact('dump', m.dump + (m.dump_at_max ? ' (at max)' : ''));
      if (m.timestamp_ns !== null) fact('time', grouped(m.timestamp_ns) + ' ns' + (m.timestamp_converted ? '' : ' (raw clock)'));
    }
    if (m.sampling_interval !== null) fact('sampling', m.sampling_interval === 0 ? 'every allocation' : 'every ' + human(m.sampling_interval, 'bytes'));
    var totals = [];
    for (var t = 0; t < T; t++) {
      var u = D.types[t].unit;
      totals.push(D.types[t].name + ' ' + (DIFF ? human(D.totals[t], u) + ' \u2192 ' + human(D.totals[T + t], u) + ' (' + signed(D.totals[T + t] - D.totals[t], u) + ')' : exact(D.totals[t], u)));
    }
    fact('totals', totals.join(' \u00b7 '), 'hc-totals');
    var sy = D.symbols;
    if (sy.native_frames > 0) {
      fact('symbolized', pct(sy.native_frames - sy.unsymbolized_frames, sy.native_frames) + ' of ' + grouped(sy.native_frames) + ' native frames', 'hc-symbols');
    }
    var warn = document.getElementById('hc-warnings');
    var loss = (m.data_loss || []).concat(DIFF ? D.base_meta.data_loss || [] : []);
    if (loss.length) warn.appendChild(el('p', { 'class': 'loss', id: 'hc-loss' }, 'Data loss: ' + loss.join(', ')));
    if (sy.unsymbolized_mappings.length) {
      warn.appendChild(el('p', { 'class': 'note', id: 'hc-unsymbolized' }, 'Unsymbolized: ' + sy.unsymbolized_mappings.slice(0, 12).map(function (x) { return x.mapping + ' (' + x.frames + (x.frames === 1 ? ' frame)' : ' frames)'); }).join(', ') + (sy.unsymbolized_mappings.length > 12 ? ', \u2026' : '')));
    }
    var pr = D.pruned, prunedText = 'Pruned: frames below ' + pr.below_percent + '% of the total are merged into [other] per parent';
    if (pr.nodes > 0) {
      var parts = [];
      for (t = 0; t < T; t++) {
        var tot = DIFF ? D.totals[T + t] : D.totals[t], pv = DIFF ? pr.values[T + t] : pr.values[t];
        parts.push(D.types[t].name + ' ' + human(pv, D.types[t].unit) + ' (' + pct(pv, tot) + ')');
      }
      prunedText += ': ' + grouped(pr.nodes) + ' nodes, ' + parts.join(', ');
    } else prunedText += ': none were';
    warn.appendChild(el('p', { 'class': 'note', id: 'hc-pruned' }, prunedText));
    var sel = document.getElementById('hc-type');
    sel.replaceChildren();
    D.types.forEach(function (ty, k) { var o = el('option', { value: k }, ty.name + ' (' + ty.unit + ')'); sel.appendChild(o); });
    sel.value = st.type;
    if (DIFF) document.getElementById('hc-side-label').hidden = false;
    document.querySelectorAll('#hc-tabs button[data-heap]').forEach(function (b) { b.hidden = !D.heap; });
    if (D.heap) {
      var H = D.heap;
      fact('objects', grouped(H.reachable_objects) + ' reachable of ' + grouped(H.objects) + ', ' + grouped(H.roots) + ' roots, ' + grouped(H.class_count) + ' classes');
    }
  }

  // ---- drawing --------------------------------------------------------------------------
  var canvas = document.getElementById('hc-canvas'), ctx = canvas.getContext('2d');
  var CSSW = 0, drawnHighlighted = [];
  function hash(str) { var h = 2166136261; for (var k = 0; k < str.length; k++) { h ^= str.charCodeAt(k); h = Math.imul(h, 16777619); } return h >>> 0; }
  var colourCache = {};
  function warm(id) {
    var c = colourCache[id];
    if (c) return c;
    var h = hash(STR[id]);
    c = id === OTHER ? '#c8c8c8' : 'rgb(' + (205 + (h % 50)) + ',' + (90 + ((h >>> 8) % 120)) + ',' + (30 + ((h >>> 16) % 50)) + ')';
    colourCache[id] = c;
    return c;
  }
  var maxAbsDelta = 1;
  function diffScale() {
    var b = cum[st.type], a = cum[T + st.type], m = 0;
    for (var i = 1; i < N; i++) { var d = Math.abs(a[i] - b[i]); if (d > m) m = d; }
    maxAbsDelta = m || 1;
  }
  function diffColour(i) {
    var d = cum[T + st.type][i] - cum[st.type][i];
    if (d === 0) return '#dcdcdc';
    var r = Math.min(1, Math.sqrt(Math.abs(d) / maxAbsDelta)), lo = Math.round(225 - 170 * r);
    return d > 0 ? 'rgb(235,' + lo + ',' + lo + ')' : 'rgb(' + lo + ',' + lo + ',235)';
  }
  function rowY(d, rows) { return st.icicle ? d * ROW : (rows - 1 - d) * ROW; }
  function rowsShown() { return Math.max(1, Math.min(maxDepth + 1, Math.floor(30000 / ROW))); }
  function viewOf() { var f = st.focus; return { fx: x[f], scale: CSSW / (w[f] || 1) }; }
  function draw() {
    var rows = rowsShown(), dpr = window.devicePixelRatio || 1;
    CSSW = canvas.parentNode.clientWidth - 28;
    canvas.style.width = CSSW + 'px'; canvas.style.height = rows * ROW + 'px';
    canvas.width = Math.round(CSSW * dpr); canvas.height = Math.round(rows * ROW * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, CSSW, rows * ROW);
    ctx.font = '11px ui-monospace, Menlo, Consolas, monospace';
    ctx.textBaseline = 'middle';
    var v = viewOf(), f = st.focus;
    drawnHighlighted = [];
    // The focus's ancestors span the whole width.
    for (var a = parent[f]; a >= 0; a = parent[a]) box(a, 0, CSSW, rows, true);
    var end = f + size[f];
    for (var i = f; i < end;) {
      var wi = w[i] * v.scale;
      if (wi < 0.5 || depth[i] >= rows) { i += size[i]; continue; }
      box(i, (x[i] - v.fx) * v.scale, wi, rows, false);
      i++;
    }
  }
  function box(i, px, pw, rows, ancestor) {
    var y = rowY(depth[i], rows), hl = st.match !== null && st.match(i);
    ctx.fillStyle = hl ? '#d000d0' : DIFF ? diffColour(i) : warm(name[i]);
    ctx.globalAlpha = ancestor ? 0.55 : 1;
    ctx.fillRect(px, y, Math.max(pw - 0.5, 0.5), ROW - 1);
    ctx.globalAlpha = 1;
    if (hl) drawnHighlighted.push(i);
    if (pw > 28) {
      var n = i === 0 ? 'all' : label(i), chars = Math.floor((pw - 6) / 6.6);
      if (chars >= 2) {
        ctx.fillStyle = hl ? '#fff' : '#000';
        ctx.fillText(n.length > chars ? n.slice(0, chars - 1) + '\u2026' : n, px + 3, y + ROW / 2);
      }
    }
  }

  // ---- hit testing, tooltips, zoom ------------------------------------------------------
  function nodeAt(px, py) {
    var rows = rowsShown(), d = st.icicle ? Math.floor(py / ROW) : rows - 1 - Math.floor(py / ROW);
    if (d < 0 || d >= rows) return -1;
    var f = st.focus;
    if (d <= depth[f]) { var a = f; while (depth[a] > d) a = parent[a]; return a; }
    var v = viewOf(), vx = v.fx + px / v.scale, cur = f;
    while (depth[cur] < d) {
      var next = -1, end = cur + size[cur];
      for (var c = cur + 1; c < end; c += size[c]) {
        if (vx >= x[c] && vx < x[c] + w[c]) { next = c; break; }
      }
      if (next < 0 || w[next] * v.scale < 0.5) return -1;
      cur = next;
    }
    return cur;
  }
  var tip = document.getElementById('hc-tip');
  function tipHtml(i) {
    var box = el('div'), u = unit();
    box.appendChild(el('b', null, i === 0 ? 'all' : label(i)));
    if (STR[map[i]]) box.appendChild(el('div', { 'class': 'note' }, STR[map[i]]));
    var tb = el('table');
    function row(k, v) { var tr = el('tr'); tr.appendChild(el('td', null, k)); tr.appendChild(el('td', null, v)); tb.appendChild(tr); }
    if (DIFF) {
      var b = cum[st.type][i], a = cum[T + st.type][i];
      row('before', exact(b, u)); row('after', exact(a, u));
      row('delta', signed(a - b, u) + ' (' + changePct(b, a) + ')');
      row('share after', pct(a, cum[T + st.type][0]));
      for (var t = 0; t < T; t++) if (t !== st.type) row(D.types[t].name, human(cum[t][i], D.types[t].unit) + ' \u2192 ' + human(cum[T + t][i], D.types[t].unit));
    } else {
      var c = cum[st.type][i];
      row(D.types[st.type].name, exact(c, u));
      row('of total', pct(c, cum[st.type][0]));
      if (st.focus !== 0) row('of zoom', pct(c, cum[st.type][st.focus]));
      row('self', exact(selfv[st.type][i], u));
      for (t = 0; t < T; t++) if (t !== st.type) row(D.types[t].name, exact(cum[t][i], D.types[t].unit) + ', self ' + human(selfv[t][i], D.types[t].unit));
    }
    box.appendChild(tb);
    return box;
  }
  canvas.addEventListener('mousemove', function (e) {
    var r = canvas.getBoundingClientRect(), i = nodeAt(e.clientX - r.left, e.clientY - r.top);
    if (i < 0) { tip.hidden = true; return; }
    tip.replaceChildren(tipHtml(i));
    tip.hidden = false;
    var gx = e.clientX - r.left + 14 + 12, gy = e.clientY - r.top + 16;
    if (gx + tip.offsetWidth > CSSW) gx = Math.max(0, gx - tip.offsetWidth - 24);
    tip.style.left = gx + 'px'; tip.style.top = gy + 'px';
  });
  canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
  canvas.addEventListener('click', function (e) {
    var r = canvas.getBoundingClientRect(), i = nodeAt(e.clientX - r.left, e.clientY - r.top);
    if (i >= 0) zoom(i);
  });
  function zoom(i) { st.focus = i; draw(); }
  document.getElementById('hc-reset').addEventListener('click', function () { zoom(0); });
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape' && e.target.tagName !== 'INPUT') zoom(0); });
  var icicleButton = document.getElementById('hc-icicle');
  icicleButton.addEventListener('click', function () {
    st.icicle = !st.icicle; icicleButton.setAttribute('aria-pressed', String(st.icicle)); draw();
  });

  // ---- search and highlighting ----------------------------------------------------------
  var matchOut = document.getElementById('hc-match');
  // Value of the stacks through a highlighted frame (each stack counted once), as [low, high]:
  // the frames drawn give it exactly, and so does the whole profile's table for one function
  // name; names that are also in pruned frames ([other]) can leave a range.
  function keptMatched() {
    var c = cum[widthSeries()], sum = 0;
    for (var i = 1; i < N;) { if (st.match(i)) { sum += c[i]; i += size[i]; } else i++; }
    return sum;
  }
  function matchedRange() {
    if (st.match === null) return [0, 0];
    var kept = keptMatched(), names = st.matchNames;
    if (st.matchExact) { var e = st.matchExact(widthSeries()); return [e, e]; }
    if (names === null) return [kept, kept];
    var series = widthSeries(), F = D.functions, tot = cum[series][0];
    var rows = names.filter(function (k) { return fnIndex[k] >= 0; });
    if (rows.length === 1) { var v = F.cum[series][fnIndex[rows[0]]]; return [v, v]; }
    if (D.pruned.nodes === 0) return [kept, kept];
    // Per name: its stacks that no drawn frame of that name is on (found in [other] only).
    var keptBy = aggregate(name, series), lo = kept, extra = 0;
    rows.forEach(function (k) {
      var all = F.cum[series][fnIndex[k]];
      if (all > lo) lo = all;
      extra += Math.max(0, all - keptBy.cum[k]);
    });
    return [lo, Math.max(lo, Math.min(tot, kept + extra))];
  }
  function matchedValue() { return matchedRange()[0]; }
  function showMatch() {
    if (st.match === null) { matchOut.textContent = ''; return; }
    var r = matchedRange(), tot = cum[widthSeries()][0], u = unit();
    if (r[0] === r[1]) matchOut.textContent = 'Matched: ' + pct(r[0], tot) + ' (' + human(r[0], u) + ' of ' + human(tot, u) + ')';
    else matchOut.textContent = 'Matched: ' + pct(r[0], tot) + ' to ' + pct(r[1], tot) + ' (' + human(r[0], u) + ' to ' + human(r[1], u) + ' of ' + human(tot, u) + '; several names matched, some only in [other])';
  }
  function highlight(pred, text, names, exact) {
    st.match = pred === null ? null : function (i) { return i > 0 && pred(i); };
    st.matchNames = names || null; st.matchExact = exact || null;
    st.matchText = text; showMatch(); draw();
  }
  var search = document.getElementById('hc-search');
  function runSearch() {
    var q = search.value;
    selectRow(null);
    if (!q) { highlight(null, ''); return; }
    var re;
    try { re = new RegExp(q); } catch (err) { var lq = q.toLowerCase(); re = { test: function (s) { return s.toLowerCase().indexOf(lq) >= 0; } }; }
    var hit = new Uint8Array(STR.length), names = [];
    for (var k = 2; k < STR.length; k++) { hit[k] = re.test(STR[k]) ? 1 : 0; if (hit[k] && fnIndex[k] >= 0) names.push(k); }
    highlight(function (i) { return hit[name[i]] === 1; }, q, names);
  }
  var searchTimer = 0;
  search.addEventListener('input', function () { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, 120); });
  search.addEventListener('keydown', function (e) { if (e.key === 'Enter') { clearTimeout(searchTimer); runSearch(); } });

  // ---- tables ---------------------------------------------------------------------------
  // Per key (function name or mapping): self and cumulative values (a key counted once per
  // stack) for the series shown; diffs also BASE's.
  function aggregate(keyOf, series) {
    var nk = STR.length, selfA = new Float64Array(nk), cumA = new Float64Array(nk), seen = new Uint8Array(nk), onStack = new Int32Array(nk);
    var stack = [];
    for (var i = 1; i < N; i++) {
      while (stack.length && stack[stack.length - 1] !== parent[i]) onStack[keyOf[stack.pop()]]--;
      var k = keyOf[i];
      selfA[k] += selfv[series][i];
      if (onStack[k] === 0) cumA[k] += cum[series][i];
      onStack[k]++; seen[k] = 1; stack.push(i);
    }
    return { self: selfA, cum: cumA, seen: seen };
  }
  var ROWS_SHOWN = 300;
  function heapTab() { return st.by === 'classes' || st.by === 'retainers'; }
  function columns() {
    var u = unit();
    if (heapTab()) {
      var H = D.heap, tot = H.reachable_shallow + H.reachable_native, cols = [
        { key: 'name', title: st.by === 'classes' ? 'Class' : 'Object', text: function (r) { return r.name; } }];
      if (st.by === 'classes') cols.push({ key: 'instances', title: 'Instances', num: true, text: function (r) { return grouped(r.instances); } });
      else cols.push({ key: 'root', title: 'GC root', num: false, text: function (r) { return r.root; } });
      return cols.concat([
        { key: 'shallow', title: 'Shallow', num: true, text: function (r) { return human(r.shallow, 'bytes'); } },
        { key: 'retained', title: 'Retained', num: true, text: function (r) { return human(r.retained, 'bytes'); } },
        { key: 'retainedNative', title: 'Retained native', num: true, text: function (r) { return human(r.retainedNative, 'bytes'); } },
        { key: 'retainedPct', title: 'Retained %', num: true, text: function (r) { return pct(r.retained + r.retainedNative, tot); } }
      ]);
    }
    if (DIFF) return [
      { key: 'name', title: keyName(), text: function (r) { return r.name; } },
      { key: 'before', title: 'Before', num: true, text: function (r) { return human(r.before, u); } },
      { key: 'after', title: 'After', num: true, text: function (r) { return human(r.after, u); } },
      { key: 'delta', title: 'Delta', num: true, text: function (r) { return signed(r.delta, u); }, cls: function (r) { return r.delta > 0 ? 'grow' : r.delta < 0 ? 'shrink' : ''; } },
      { key: 'deltaPct', title: 'Delta %', num: true, text: function (r) { return changePct(r.before, r.after); } },
      { key: 'selfDelta', title: 'Self delta', num: true, text: function (r) { return signed(r.selfDelta, u); } }
    ];
    var tot = cum[st.type][0];
    return [
      { key: 'name', title: keyName(), text: function (r) { return r.name; } },
      { key: 'self', title: 'Self', num: true, text: function (r) { return human(r.self, u); } },
      { key: 'selfPct', title: 'Self %', num: true, text: function (r) { return pct(r.self, tot); } },
      { key: 'cum', title: 'Cumulative', num: true, text: function (r) { return human(r.cum, u); } },
      { key: 'cumPct', title: 'Cum %', num: true, text: function (r) { return pct(r.cum, tot); } }
    ];
  }
  var tableRows = [];
  function keyName() { return st.by === 'function' ? 'Function' : st.by === 'mapping' ? 'Mapping' : 'Stack (leaf first)'; }
  // A stack's frames, leaf first (pruned frames show as [other]).
  // Shown: the leaf and up to 7 callers; the row's tooltip has the whole stack.
  var STACK_SHOWN = 8;
  function stackFrames(i) { var parts = []; for (; i > 0; i = parent[i]) parts.push(label(i)); return parts; }
  function stackText(i) {
    var f = stackFrames(i);
    return f.slice(0, STACK_SHOWN).join(' \u2190 ') + (f.length > STACK_SHOWN ? ' \u2190 \u2026 ' + (f.length - STACK_SHOWN) + ' more' : '');
  }
  function buildRows() {
    var rows = [];
    if (heapTab()) {
      var H = D.heap;
      if (st.by === 'classes') H.classes.forEach(function (c, j) {
        rows.push({ id: j, order: j, name: c.name, instances: c.instances, shallow: c.shallow + c.native, retained: c.retained, retainedNative: c.retained_native, retainedPct: c.retained + c.retained_native });
      });
      else H.retainers.forEach(function (r, j) {
        rows.push({ id: j, order: j, name: r.class + ' @0x' + r.id.toString(16), root: r.root_kind || (r.path ? 'via ' + r.path.root_kind : 'unreachable'), shallow: r.shallow + r.native, retained: r.retained, retainedNative: r.retained_native, retainedPct: r.retained + r.retained_native });
      });
      tableRows = rows;
      return;
    } else if (st.by === 'stack') {
      // Each drawn node with a self value is a stack (its frames merged by label).
      var bs = DIFF ? st.type : -1, as = DIFF ? T + st.type : st.type;
      for (var i = 1; i < N; i++) {
        var a = selfv[as][i], b = bs >= 0 ? selfv[bs][i] : 0;
        if (a === 0 && b === 0) continue;
        var r = { id: i, name: stackText(i) };
        if (DIFF) { r.before = b; r.after = a; r.delta = a - b; r.deltaPct = b ? (a - b) / Math.abs(b) : (a ? Infinity : 0); r.selfDelta = a - b; }
        else { r.self = a; r.selfPct = a; r.cum = cum[as][i]; r.cumPct = r.cum; }
        rows.push(r);
      }
    } else {
      // Exact per key: computed over the whole profile before pruning.
      var tab = st.by === 'function' ? D.functions : D.mappings;
      tab.key.forEach(function (k, j) {
        var nm = STR[k] || '[no mapping]';
        if (DIFF) {
          var bc = tab.cum[st.type][j], ac = tab.cum[T + st.type][j];
          if (ac === 0 && bc === 0) return;
          rows.push({ id: k, name: nm, before: bc, after: ac, delta: ac - bc, deltaPct: bc ? (ac - bc) / Math.abs(bc) : (ac ? Infinity : 0), selfDelta: tab.self[T + st.type][j] - tab.self[st.type][j] });
        } else {
          var sv = tab.self[st.type][j], cv = tab.cum[st.type][j];
          if (cv === 0 && sv === 0) return;
          rows.push({ id: k, name: nm, self: sv, selfPct: sv, cum: cv, cumPct: cv });
        }
      });
    }
    tableRows = rows;
    if (st.sortKey === null) { st.sortKey = DIFF ? 'delta' : 'cum'; st.sortAsc = false; }
  }
  function renderTable() {
    var cols = columns(), key = st.sortKey, asc = st.sortAsc;
    var colOk = cols.some(function (c) { return c.key === key; });
    if (!colOk) { key = st.sortKey = DIFF ? 'delta' : heapTab() ? 'retainedPct' : 'cum'; asc = st.sortAsc = false; }
    tableRows.sort(function (p, q) {
      var a = p[key], b = q[key], r = typeof a === 'string' ? a.localeCompare(b) : a - b;
      // Ties: heap tables keep the top report's order, the others go by name.
      if (r === 0 || r !== r) r = p.order !== undefined ? q.order - p.order : p.name.localeCompare(q.name);
      return asc ? r : -r;
    });
    var thead = document.querySelector('#hc-table thead'), tbody = document.querySelector('#hc-table tbody');
    var tr = el('tr');
    cols.forEach(function (c) {
      var th = el('th', { 'data-key': c.key }, c.title);
      if (c.key === key) th.className = 'sorted' + (asc ? ' asc' : '');
      th.addEventListener('click', function () {
        if (st.sortKey === c.key) st.sortAsc = !st.sortAsc; else { st.sortKey = c.key; st.sortAsc = !c.num; }
        renderTable();
      });
      tr.appendChild(th);
    });
    thead.replaceChildren(tr);
    var frag = document.createDocumentFragment();
    tableRows.slice(0, ROWS_SHOWN).forEach(function (r) {
      var row = el('tr', { 'data-id': r.id });
      if (st.selectedRow === r.id) row.className = 'on';
      cols.forEach(function (c, k) {
        var td = el('td', k === 0 && st.by === 'stack' ? { title: stackFrames(r.id).join('\n') } : null, c.text(r));
        if (c.cls) td.className = c.cls(r);
        row.appendChild(td);
      });
      row.addEventListener('click', function () { selectRow(st.selectedRow === r.id ? null : r.id); });
      frag.appendChild(row);
    });
    tbody.replaceChildren(frag);
    document.getElementById('hc-table-note').textContent = tableRows.length > ROWS_SHOWN ? 'Showing ' + ROWS_SHOWN + ' of ' + tableRows.length + ' rows.' : tableRows.length + ' rows.';
  }
  // The path from a GC root to a retainer, one step a line.
  function showPath(cls, ret) {
    var box = document.getElementById('hc-path');
    box.hidden = false;
    if (!ret || !ret.path) {
      box.replaceChildren(el('p', { 'class': 'note' }, ret ? cls + ' @0x' + ret.id.toString(16) + ' is a GC root' + (ret.root_kind ? ' (' + ret.root_kind + ')' : '') : 'No instance of ' + cls + ' is among the ' + D.heap.retainers.length + ' largest retainers: no path listed.'));
      return;
    }
    var p = ret.path, ol = el('ol', { id: 'hc-path-steps' });
    ol.appendChild(el('li', { 'class': 'root' }, '[' + p.root_kind + ']'));
    p.steps.forEach(function (stp, k) {
      if (p.elided > 0 && k === p.elided_after) ol.appendChild(el('li', { 'class': 'note' }, '\u2026 ' + p.elided + ' more objects \u2026'));
      ol.appendChild(el('li', null, stp.class + ' @0x' + stp.id.toString(16) + (stp.via ? ' ' + stp.via + ' \u2192' : '')));
    });
    box.replaceChildren(el('div', null, 'Path from a GC root to ' + ret.class + ' @0x' + ret.id.toString(16) + ' (' + p.length + ' objects):'), ol);
  }
  function selectRow(id) {
    if (id === null) { var pb = document.getElementById('hc-path'); pb.hidden = true; pb.replaceChildren(); }
    st.selectedRow = id;
    document.querySelectorAll('#hc-table tbody tr').forEach(function (tr) { tr.className = Number(tr.getAttribute('data-id')) === id ? 'on' : ''; });
    if (id === null) { if (st.matchText.indexOf('row:') === 0) highlight(null, ''); return; }
    search.value = '';
    if (heapTab()) {
      var H = D.heap, cls = st.by === 'classes' ? H.classes[id].name : H.retainers[id].class;
      var ret = st.by === 'retainers' ? H.retainers[id] : H.retainers.filter(function (r) { return r.class === cls; })[0];
      showPath(cls, ret || null);
      // The class's frames in the tree (labels are the class, then a root kind or a field).
      highlight(function (i) { var l = label(i); return l === cls || l.indexOf(cls + ' [') === 0; }, 'row:' + cls);
      return;
    }
    if (st.by === 'stack') {
      // The stack's leaf node; its value is exact for what is drawn.
      highlight(function (i) { return i === id; }, 'row:stack');
      return;
    }
    var keyOf = st.by === 'function' ? name : map, tab = st.by === 'function' ? D.functions : D.mappings, j = (st.by === 'function' ? fnIndex : mapIndex)[id];
    highlight(function (i) { return keyOf[i] === id; }, 'row:' + STR[id], null, j >= 0 ? function (series) { return tab.cum[series][j]; } : null);
  }
  document.querySelectorAll('#hc-tabs button').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('#hc-tabs button').forEach(function (o) { o.className = o === b ? 'on' : ''; });
      st.by = b.getAttribute('data-by'); selectRow(null);
      // Stacks rank by their own value; functions and mappings by cumulative (diffs: delta).
      st.sortKey = DIFF ? 'delta' : st.by === 'stack' ? 'self' : heapTab() ? 'retainedPct' : 'cum'; st.sortAsc = false;
      buildRows(); renderTable();
    });
  });

  // ---- sample type and sides ------------------------------------------------------------
  function refresh() {
    layout(); if (DIFF) diffScale(); buildRows(); renderTable(); showMatch(); draw(); drawTimeline();
  }
  document.getElementById('hc-type').addEventListener('change', function (e) { st.type = Number(e.target.value); refresh(); });
  document.getElementById('hc-side').addEventListener('change', function (e) { st.side = e.target.value; st.focus = 0; refresh(); });
  window.addEventListener('resize', function () { draw(); drawTimeline(); });

  // ---- the timeline of a report of several dumps ----------------------------------------
  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function dumpTotal(j) { var d = TL.dumps[j]; return st.type < d.totals.length ? d.totals[st.type] : 0; }
  function drawTimeline() {
    var box = document.getElementById('hc-timeline');
    if (!TL) return;
    box.hidden = false;
    var n = TL.dumps.length, W = Math.max(200, box.clientWidth - 28), H = 96, top = 14, bottom = 18, max = 0;
    for (var j = 0; j < n; j++) max = Math.max(max, dumpTotal(j));
    var chart = svg('svg', { id: 'hc-timeline-chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    var bw = W / n, u = unit();
    for (j = 0; j < n; j++) {
      var v = dumpTotal(j), h = max > 0 ? (H - top - bottom) * v / max : 0, m = TL.dumps[j].meta;
      var g = svg('g', { 'class': 'dump' + (j === st.dump ? ' on' : ''), 'data-dump': j });
      g.appendChild(svg('rect', { x: j * bw + 2, y: H - bottom - h, width: Math.max(1, bw - 4), height: Math.max(h, 1) }));
      g.appendChild(svg('rect', { 'class': 'hit', x: j * bw, y: 0, width: bw, height: H }));
      if (bw > 24) g.appendChild(svg('text', { x: j * bw + bw / 2, y: H - 5, 'text-anchor': 'middle' }, String(m.dump)));
      if (bw > 60) g.appendChild(svg('text', { x: j * bw + bw / 2, y: H - bottom - h - 3, 'text-anchor': 'middle' }, human(v, u)));
      g.appendChild(svg('title', {}, 'dump ' + m.dump + (m.timestamp_ns !== null ? ' at ' + grouped(m.timestamp_ns) + ' ns' : '') + ': ' + D.types[st.type].name + ' ' + exact(v, u)));
      g.addEventListener('click', (function (k) { return function () { chooseDump(k); }; })(j));
      chart.appendChild(g);
    }
    box.replaceChildren(el('div', { 'class': 'note' }, D.types[st.type].name + ' per dump (' + n + ' dumps); click one to show it'), chart);
  }
  function chooseDump(j) {
    if (!TL || j < 0 || j >= TL.dumps.length) return;
    st.dump = j; show(TL.dumps[j], true);
  }
  function show(doc, keepType) {
    var t = st.type;
    load(doc);
    st.type = keepType && t < T ? t : Math.min(D.shown || 0, T - 1);
    // A type that is zero everywhere (pprof's default can be) would draw nothing: the first
    // type with values is shown instead, and the header says so.
    var empty = null;
    if (!DIFF && !keepType && D.totals[st.type] === 0) {
      for (var k = 0; k < T; k++) if (D.totals[k] !== 0) { empty = D.types[st.type].name; st.type = k; break; }
    }
    st.focus = 0; st.selectedRow = null; st.match = null; st.matchNames = null; st.matchExact = null; st.matchText = '';
    header();
    if (empty !== null) document.getElementById('hc-warnings').appendChild(el('p', { 'class': 'note', id: 'hc-empty-type' }, empty + ' is zero everywhere: showing ' + D.types[st.type].name + ' (choose another under Value)'));
    refresh();
    if (search.value) runSearch();
  }

  // ---- a read-only view of the page for scripts and tests -------------------------------
  window.heapconvReport = {
    state: function () {
      var r = matchedRange();
      return { focus: st.focus === 0 ? 'all' : label(st.focus), type: D.types[st.type].name, icicle: st.icicle, nodes: N, match: matchOut.textContent, matchedValue: r[0], matchedHigh: r[1], total: cum[widthSeries()][0], dump: TL ? st.dump : null, dumps: TL ? TL.dumps.length : null, by: st.by };
    },
    highlighted: function () {
      var seen = {}, out = [];
      drawnHighlighted.forEach(function (i) { var n = label(i); if (!seen[n]) { seen[n] = 1; out.push(n); } });
      return out.sort();
    },
    // The dumps of a timeline: number, total of the type shown, and which is chosen.
    timeline: function () {
      if (!TL) return null;
      return TL.dumps.map(function (d, j) { return { dump: d.meta.dump, total: dumpTotal(j), chosen: j === st.dump }; });
    },
    // Where the widest drawn frame called `n` is, in page coordinates (null if not drawn).
    frameRect: function (n) {
      var v = viewOf(), rows = rowsShown(), r = canvas.getBoundingClientRect(), best = -1;
      for (var i = 0; i < N; i++) {
        if (label(i) !== n || (best >= 0 && w[i] <= w[best])) continue;
        var inView = i >= st.focus && i < st.focus + size[st.focus];
        if (inView && w[i] * v.scale >= 0.5 && depth[i] < rows) best = i;
      }
      if (best < 0) return null;
      return { x: r.left + window.scrollX + (x[best] - v.fx) * v.scale, y: r.top + window.scrollY + rowY(depth[best], rows), w: w[best] * v.scale, h: ROW - 1, canvasWidth: CSSW };
    }
  };

  if (TL) { st.dump = TL.chosen; show(TL.dumps[TL.chosen], false); } else show(ALL, false);
  document.body.setAttribute('data-ready', String(Math.round(performance.now())));
})();
