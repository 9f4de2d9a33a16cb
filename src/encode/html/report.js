// heapconv HTML report: a flame graph drawn on one canvas, a header and sortable tables, from
// the JSON in #heapconv-data (see src/encode/html.rs for its layout). No library, no network.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('heapconv-data').textContent);
  var STR = D.strings;
  var N = D.nodes.parent.length;
  var DIFF = D.kind === 'diff';
  var T = D.types.length;
  var OTHER = 1; // string id of "[other]"
  var ROW = 18;

  // ---- the tree -------------------------------------------------------------------------
  var parent = new Int32Array(N), name = Int32Array.from(D.nodes.name), map = Int32Array.from(D.nodes.map);
  var depth = new Int32Array(N), size = new Int32Array(N), maxDepth = 0;
  parent[0] = -1;
  for (var i = 1; i < N; i++) {
    parent[i] = i - D.nodes.parent[i];
    depth[i] = depth[parent[i]] + 1;
    if (depth[i] > maxDepth) maxDepth = depth[i];
  }
  for (i = N - 1; i >= 0; i--) { size[i] += 1; if (i > 0) size[parent[i]] += size[i]; }
  // Cumulative values per series (DIFF: BASE's types, then NEW's).
  var selfv = [], cum = [];
  for (var s = 0; s < D.nodes.self.length; s++) {
    var sv = Float64Array.from(D.nodes.self[s]), cv = Float64Array.from(sv);
    for (i = N - 1; i > 0; i--) cv[parent[i]] += cv[i];
    selfv.push(sv); cum.push(cv);
  }

  // ---- state ----------------------------------------------------------------------------
  var st = { type: Math.min(D.shown || 0, T - 1), side: 'new', icicle: false, focus: 0, match: null, matchText: '', by: 'function', sortKey: null, sortAsc: false, selectedRow: null };
  var x = new Float64Array(N), w = new Float64Array(N);
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
    document.getElementById('hc-title').textContent = D.title;
    var facts = document.getElementById('hc-facts'), m = D.meta;
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
    D.types.forEach(function (ty, k) { var o = el('option', { value: k }, ty.name + ' (' + ty.unit + ')'); sel.appendChild(o); });
    sel.value = st.type;
    if (DIFF) document.getElementById('hc-side-label').hidden = false;
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
  // Share of the total under the highlighted frames (each stack counted once).
  function matchedValue() {
    var c = cum[widthSeries()], sum = 0;
    if (st.match === null) return 0;
    for (var i = 1; i < N;) { if (st.match(i)) { sum += c[i]; i += size[i]; } else i++; }
    return sum;
  }
  function showMatch() {
    if (st.match === null) { matchOut.textContent = ''; return; }
    var v = matchedValue(), tot = cum[widthSeries()][0];
    matchOut.textContent = 'Matched: ' + pct(v, tot) + ' (' + human(v, unit()) + ' of ' + human(tot, unit()) + ')';
  }
  function highlight(pred, text) {
    st.match = pred === null ? null : function (i) { return i > 0 && pred(i); };
    st.matchText = text; showMatch(); draw();
  }
  var search = document.getElementById('hc-search');
  function runSearch() {
    var q = search.value;
    selectRow(null);
    if (!q) { highlight(null, ''); return; }
    var re;
    try { re = new RegExp(q); } catch (err) { var lq = q.toLowerCase(); re = { test: function (s) { return s.toLowerCase().indexOf(lq) >= 0; } }; }
    var hit = new Uint8Array(STR.length);
    for (var k = 2; k < STR.length; k++) hit[k] = re.test(STR[k]) ? 1 : 0;
    highlight(function (i) { return hit[name[i]] === 1; }, q);
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
  function columns() {
    var u = unit();
    if (DIFF) return [
      { key: 'name', title: st.by === 'function' ? 'Function' : 'Mapping', text: function (r) { return r.name; } },
      { key: 'before', title: 'Before', num: true, text: function (r) { return human(r.before, u); } },
      { key: 'after', title: 'After', num: true, text: function (r) { return human(r.after, u); } },
      { key: 'delta', title: 'Delta', num: true, text: function (r) { return signed(r.delta, u); }, cls: function (r) { return r.delta > 0 ? 'grow' : r.delta < 0 ? 'shrink' : ''; } },
      { key: 'deltaPct', title: 'Delta %', num: true, text: function (r) { return changePct(r.before, r.after); } },
      { key: 'selfDelta', title: 'Self delta', num: true, text: function (r) { return signed(r.selfDelta, u); } }
    ];
    var tot = cum[st.type][0];
    return [
      { key: 'name', title: st.by === 'function' ? 'Function' : 'Mapping', text: function (r) { return r.name; } },
      { key: 'self', title: 'Self', num: true, text: function (r) { return human(r.self, u); } },
      { key: 'selfPct', title: 'Self %', num: true, text: function (r) { return pct(r.self, tot); } },
      { key: 'cum', title: 'Cumulative', num: true, text: function (r) { return human(r.cum, u); } },
      { key: 'cumPct', title: 'Cum %', num: true, text: function (r) { return pct(r.cum, tot); } }
    ];
  }
  var tableRows = [];
  function buildRows() {
    var keyOf = st.by === 'function' ? name : map, rows = [];
    if (DIFF) {
      var b = aggregate(keyOf, st.type), a = aggregate(keyOf, T + st.type);
      for (var k = 0; k < STR.length; k++) {
        if (!a.seen[k] && !b.seen[k]) continue;
        if (a.cum[k] === 0 && b.cum[k] === 0) continue;
        rows.push({ id: k, name: STR[k] || '[no mapping]', before: b.cum[k], after: a.cum[k], delta: a.cum[k] - b.cum[k], deltaPct: b.cum[k] ? (a.cum[k] - b.cum[k]) / Math.abs(b.cum[k]) : (a.cum[k] ? Infinity : 0), selfDelta: a.self[k] - b.self[k] });
      }
    } else {
      var g = aggregate(keyOf, st.type);
      for (k = 0; k < STR.length; k++) {
        if (!g.seen[k] || (g.cum[k] === 0 && g.self[k] === 0)) continue;
        rows.push({ id: k, name: STR[k] || '[no mapping]', self: g.self[k], selfPct: g.self[k], cum: g.cum[k], cumPct: g.cum[k] });
      }
    }
    tableRows = rows;
    if (st.sortKey === null) { st.sortKey = DIFF ? 'delta' : 'cum'; st.sortAsc = false; }
  }
  function renderTable() {
    var cols = columns(), key = st.sortKey, asc = st.sortAsc;
    var colOk = cols.some(function (c) { return c.key === key; });
    if (!colOk) { key = st.sortKey = DIFF ? 'delta' : 'cum'; asc = st.sortAsc = false; }
    tableRows.sort(function (p, q) {
      var a = p[key], b = q[key], r = typeof a === 'string' ? a.localeCompare(b) : a - b;
      if (r === 0 || r !== r) r = p.name.localeCompare(q.name);
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
      cols.forEach(function (c) { var td = el('td', null, c.text(r)); if (c.cls) td.className = c.cls(r); row.appendChild(td); });
      row.addEventListener('click', function () { selectRow(st.selectedRow === r.id ? null : r.id); });
      frag.appendChild(row);
    });
    tbody.replaceChildren(frag);
    document.getElementById('hc-table-note').textContent = tableRows.length > ROWS_SHOWN ? 'Showing ' + ROWS_SHOWN + ' of ' + tableRows.length + ' rows.' : tableRows.length + ' rows.';
  }
  function selectRow(id) {
    st.selectedRow = id;
    document.querySelectorAll('#hc-table tbody tr').forEach(function (tr) { tr.className = Number(tr.getAttribute('data-id')) === id ? 'on' : ''; });
    if (id === null) { if (st.matchText.indexOf('row:') === 0) highlight(null, ''); return; }
    search.value = '';
    var keyOf = st.by === 'function' ? name : map;
    highlight(function (i) { return keyOf[i] === id; }, 'row:' + STR[id]);
  }
  document.querySelectorAll('#hc-tabs button').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('#hc-tabs button').forEach(function (o) { o.className = o === b ? 'on' : ''; });
      st.by = b.getAttribute('data-by'); selectRow(null); buildRows(); renderTable();
    });
  });

  // ---- sample type and sides ------------------------------------------------------------
  function refresh() {
    layout(); if (DIFF) diffScale(); buildRows(); renderTable(); showMatch(); draw();
  }
  document.getElementById('hc-type').addEventListener('change', function (e) { st.type = Number(e.target.value); refresh(); });
  document.getElementById('hc-side').addEventListener('change', function (e) { st.side = e.target.value; st.focus = 0; refresh(); });
  window.addEventListener('resize', function () { draw(); });

  // ---- a read-only view of the page for scripts and tests -------------------------------
  window.heapconvReport = {
    state: function () {
      return { focus: st.focus === 0 ? 'all' : label(st.focus), type: D.types[st.type].name, icicle: st.icicle, nodes: N, match: matchOut.textContent, matchedValue: matchedValue(), total: cum[widthSeries()][0] };
    },
    highlighted: function () {
      var seen = {}, out = [];
      drawnHighlighted.forEach(function (i) { var n = label(i); if (!seen[n]) { seen[n] = 1; out.push(n); } });
      return out.sort();
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

  header();
  refresh();
  document.body.setAttribute('data-ready', String(Math.round(performance.now())));
})();
