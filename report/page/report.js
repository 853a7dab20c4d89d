// The rank page's script, after common.js (its "use strict" holds for both).
(function () {
const data = JSON.parse(document.getElementById("gd-data").textContent);
// The innermost frames, the rest behind a click: a finding's stacks would otherwise fill the first screen.
function stackBox(frames) {
  const shown = 4, box = el("div", "stack", frames.slice(0, shown).map(frameText).join("\n"));
  if (frames.length > shown) { const more = el("details", "frames"); more.append(el("summary", "", (frames.length - shown) + (frames.length - shown === 1 ? " more frame" : " more frames")), document.createTextNode(frames.slice(shown).map(frameText).join("\n"))); box.append(more); }
  return box;
}

document.getElementById("gd-title").textContent = "gpudiag report: " + data.title;
document.getElementById("gd-meta").textContent = data.source + " trace, " + data.events + " events over " + fmtUs(data.duration_us);
const sentence = m => m.charAt(0).toUpperCase() + m.slice(1) + ".";
// A crash leads the findings; what the trace may be missing stays above them.
const warnings = document.getElementById("gd-warnings");
for (const w of data.warnings) if (w.id !== "crashed") warnings.append(el("div", "warn", sentence(w.message)));

// Findings: the crash first, then by rule, errors first (the data comes in
// the terminal summary's order), each with the catalogue entry.
const fsec = document.getElementById("gd-findings");
const crashes = data.warnings.filter(w => w.id === "crashed");
document.getElementById("gd-findings-title").textContent = "Findings: " + data.findings.length + (crashes.length ? ", and the program crashed" : "");
for (const c of crashes) { const box = el("div", "crash"); box.append(el("span", "sev", "crash"), document.createTextNode(sentence(c.message))); fsec.append(box); }
if (!data.findings.length) fsec.append(el("p", "", "No findings."));
const byRule = new Map();
for (const f of data.findings) { if (!byRule.has(f.rule)) byRule.set(f.rule, []); byRule.get(f.rule).push(f); }
const shownPerRule = 5;  // the rest behind a click, so one busy rule does not push the others off the screen
function findingBox(f) {
  const box = el("div", "finding"); box.append(el("div", "", f.message));
  if (f.stack) box.append(stackBox(f.stack));
  for (const n of f.notes || []) { box.append(el("div", "", "note: " + n.message)); if (n.stack) box.append(stackBox(n.stack)); }
  return box;
}
for (const [rule, list] of byRule) {
  // The first group and every error open, whatever else there is.
  const d = el("details", "rule"); d.open = byRule.size <= 4 || !fsec.querySelector("details.rule") || list[0].severity === "error";
  const s = el("summary");
  s.append(el("span", "sev sev-" + list[0].severity, list[0].severity), document.createTextNode(rule + " " + (list[0].name || "") + " \u00d7" + list.length + (list[0].summary ? ": " + list[0].summary : "")));
  d.append(s);
  for (const f of list.slice(0, shownPerRule)) d.append(findingBox(f));
  if (list.length > shownPerRule) {
    const more = el("details", "more"); more.append(el("summary", "", (list.length - shownPerRule) + " more"));
    for (const f of list.slice(shownPerRule)) more.append(findingBox(f));
    d.append(more);
  }
  if (list[0].explanation) { const ex = el("details"); ex.append(el("summary", "", "About " + rule), el("pre", "explain", list[0].explanation)); d.append(ex); }
  fsec.append(d);
}

// GPU time breakdown.
const tsec = document.getElementById("gd-time");
if (!data.gpu_time.length) tsec.append(el("p", "", "No GPU activity in this trace."));
for (const g of data.gpu_time) {
  tsec.append(el("h3", "", g.label + ": " + g.span));
  const pct = v => g.total_ns ? (100 * v / g.total_ns).toFixed(1) + "%" : "-";
  const bar = el("div", "bar");
  for (const [v, c] of [[g.computation_ns, "#3f7fd0"], [g.exposed_comm_ns, "#8e24aa"], [g.exposed_memcpy_ns, "#e08a1e"], [g.idle_ns, "#d8dce4"]]) { const sp = el("span"); sp.style.width = (g.total_ns ? 100 * v / g.total_ns : 0) + "%"; sp.style.background = c; bar.append(sp); }
  tsec.append(bar);
  const t = el("table"); const hr = el("tr"); hr.append(el("th", "", "category"), el("th", "", "time"), el("th", "", "share")); t.append(hr);
  for (const [k, v] of [["busy", g.busy_ns], ["idle", g.idle_ns], ["computation", g.computation_ns], ["kernels", g.kernel_ns], ["memsets", g.memset_ns], ["memcpy", g.memcpy_ns], ["exposed memcpy", g.exposed_memcpy_ns], ["communication", g.communication_ns]]) {
    const r = el("tr"); r.append(el("td", "", k), el("td", "", fmtUs(v / 1000)), el("td", "", pct(v))); t.append(r);
  }
  tsec.append(t, el("p", "", g.kernels + " kernels, " + g.memcpys + " copies, " + g.memsets + " memsets"));
}

// Memory timeline per device: stacked allocations drawn per segment between
// consecutive allocation/free times. Zoomed in, the finest level of detail
// whose tiles are at least as wide as the view is drawn, so that one or two
// tiles cover it, each with its own largest allocations on its merged rest.
function kernelsOf(dev) { return data.kernels.filter(k => k[3] === dev).sort((a, b) => a[0] - b[0]); }
function lowerBound(arr, t, key) { let lo = 0, hi = arr.length; while (lo < hi) { const m = (lo + hi) >> 1; if (key(arr[m]) < t) lo = m + 1; else hi = m; } return lo; }
function stepAt(points, t) { const i = lowerBound(points, t + 1e-9, p => p[0]) - 1; return i >= 0 ? points[i][1] : 0; }
// Allocations drawn one by one (`list`, coloured by `keys`) stacked on the
// merged rest (`other`), as segments over [from, to] (a tile) or over all
// their times.
function layer(list, keys, other, from, to) {
  const tset = new Set(); for (const s of list) { tset.add(s.start); tset.add(s.end); } for (const p of other) tset.add(p[0]);
  let times = Array.from(tset);
  if (from !== undefined) { times = times.filter(t => t > from && t < to); times.push(from, to); }
  times.sort((a, b) => a - b);
  const segs = []; let top = 0;
  for (let k = 0; k + 1 < times.length; k++) {
    const t0 = times[k], t1 = times[k + 1], base = stepAt(other, t0); let y = base; const rects = [];
    for (let i = 0; i < list.length; i++) { const s = list[i]; if (s.start <= t0 && s.end >= t1) { rects.push([i, y, y + s.bytes]); y += s.bytes; } }
    segs.push({ t0, t1, base, top: y, rects }); if (y > top) top = y;
  }
  return { list, keys, segs, top, times };
}
function Timeline(root, dev) {
  const wrap = el("div", "tl"); root.append(wrap);
  wrap.append(el("h3", "", dev.label + ": peak " + fmtBytes(dev.peak_bytes) + " at " + fmtUs(dev.peak_us) + (dev.capacity_bytes ? " of " + fmtBytes(dev.capacity_bytes) : "") + ", " + dev.allocations + " allocations" + (dev.other_count ? " (" + dev.other_count + " others merged)" : "")));
  const controls = el("div", "controls"); const reset = el("button", "", "Reset zoom"); const range = el("span"); controls.append(reset, range); wrap.append(controls);
  const canvas = el("canvas"); wrap.append(canvas);
  const axis = el("div", "axis"); wrap.append(axis, el("div", "axis-caption", "time since the start of the trace"));
  const tip = el("div", "tip"); wrap.append(tip);
  const series = dev.series, kernels = kernelsOf(dev.device);
  canvas.dataset.seriesCount = String(series.length + (dev.other.length ? 1 : 0));
  canvas.dataset.device = String(dev.device);
  const whole = layer(series, series.map((s, i) => i), dev.other), times = whole.times;
  let maxY = Math.max(1, whole.top);
  for (const p of dev.reserved.concat(dev.allocated)) if (p[1] > maxY) maxY = p[1];
  // The finer levels' tiles; a tile's series are indices into the level-0 series, then into the detail's blocks.
  const detail = dev.detail, tiles = new Map(), built = new Map();
  const blocks = detail ? detail.blocks.map(b => ({ start: b[0], end: b[1], bytes: b[2], addr: b[3], kind: b[4], stack: b[5], live_at_end: b[6] })) : [];
  if (detail) for (const t of detail.tiles) tiles.set(t.level + ":" + t.index, t);
  function tileLayer(t) {
    let l = built.get(t);
    if (!l) { l = layer(t.series.map(k => k < series.length ? series[k] : blocks[k - series.length]), t.series, t.other, t.from, t.to); built.set(t, l); if (l.top > maxY) maxY = l.top; }
    return l;
  }
  // The parts of the view and the layer each draws. Where the data leaves a
  // tile out, it shows little that the nearest coarser tile kept does not,
  // and that one is drawn.
  function regions() {
    if (!detail) return [{ t0: -Infinity, t1: Infinity, layer: whole, level: 0 }];
    const span = detail.to - detail.from, w = view.t1 - view.t0;
    let k = 0; while (k < detail.levels && span / Math.pow(2, k + 1) >= w) k++;
    const n = Math.pow(2, k), width = span / n, at = t => Math.max(0, Math.min(n - 1, Math.floor((t - detail.from) / width)));
    const out = [];
    for (let i = at(view.t0); i <= at(view.t1); i++) {
      let lv = k, j = i, t;
      for (; lv > 0 && !(t = tiles.get(lv + ":" + j)); lv--) j = Math.floor(j / 2);
      const l = lv ? tileLayer(t) : whole, t0 = i ? detail.from + i * width : -Infinity, t1 = i < n - 1 ? detail.from + (i + 1) * width : Infinity;
      const last = out[out.length - 1];
      if (last && last.layer === l) last.t1 = t1; else out.push({ t0, t1, layer: l, level: lv });
    }
    return out;
  }
  const full = { t0: times.length ? times[0] : 0, t1: times.length ? Math.max(times[times.length - 1], times[0] + 1) : 1 };
  let view = { t0: full.t0, t1: full.t1 }, dragFrom = null, parts = [];
  // A link can open the page zoomed: #zoom=<from us>,<to us>.
  const zm = /zoom=([0-9.]+),([0-9.]+)/.exec(location.hash);
  if (zm && Number(zm[2]) > Number(zm[1])) view = { t0: Number(zm[1]), t1: Number(zm[2]) };
  const H = 320, pad = 4;
  function size() { const w = Math.max(300, wrap.clientWidth || 1000), r = window.devicePixelRatio || 1; canvas.width = w * r; canvas.height = H * r; const c = canvas.getContext("2d"); c.setTransform(r, 0, 0, r, 0, 0); return { c, w }; }
  const colour = i => "hsl(" + ((i * 47) % 360) + ",58%," + (48 + (i % 3) * 8) + "%)";
  function draw() {
    parts = regions();
    const { c, w } = size(); const X = t => (t - view.t0) / (view.t1 - view.t0) * w, Y = b => H - pad - b / maxY * (H - 2 * pad);
    c.clearRect(0, 0, w, H);
    const drawn = new Set();
    for (const part of parts) {
      const from = Math.max(part.t0, view.t0), to = Math.min(part.t1, view.t1);
      for (const sg of part.layer.segs) {
        // Whole pixels, so neighbouring segments of one allocation join without seams.
        if (sg.t1 <= from || sg.t0 >= to) continue; const x0 = Math.floor(X(Math.max(sg.t0, part.t0))), x1 = Math.max(Math.ceil(X(Math.min(sg.t1, part.t1))), x0 + 1);
        if (sg.base > 0) { c.fillStyle = "#c3c8d2"; c.fillRect(x0, Y(sg.base), x1 - x0, Y(0) - Y(sg.base)); }
        for (const [i, y0, y1] of sg.rects) { const key = part.layer.keys[i]; drawn.add(key); c.fillStyle = colour(key); c.fillRect(x0, Y(y1), x1 - x0, Y(y0) - Y(y1)); }
      }
    }
    for (const [pts, col] of [[dev.reserved, "#c62828"], [dev.allocated, "#1d2330"]]) {
      if (!pts.length) continue; c.strokeStyle = col; c.setLineDash(col === "#c62828" ? [5, 3] : []); c.beginPath();
      pts.forEach((p, j) => { const x = X(p[0]), y = Y(p[1]); if (j) c.lineTo(x, Y(pts[j - 1][1])); j ? c.lineTo(x, y) : c.moveTo(x, y); }); c.stroke(); c.setLineDash([]);
    }
    if (dragFrom !== null && dragTo !== null) { c.fillStyle = "rgba(63,127,208,.18)"; c.fillRect(Math.min(dragFrom, dragTo), 0, Math.abs(dragTo - dragFrom), H); }
    c.fillStyle = "#556"; c.font = "11px sans-serif"; c.fillText(fmtBytes(maxY), 4, 12);
    drawAxis(w, X);
    const level = Math.max(...parts.map(p => p.level));
    canvas.dataset.view = view.t0 + "," + view.t1; canvas.dataset.level = String(level); canvas.dataset.drawn = String(drawn.size);
    range.textContent = fmtUs(view.t0) + " \u2013 " + fmtUs(view.t1) + "  (" + drawn.size + " allocations drawn one by one" + (level ? ", detail level " + level : "") + (dev.reserved.length ? "; dashed red: reserved, black: allocated" : "") + ")";
  }
  // Ticks at 1, 2 or 5 times a power of ten, in the unit of the view's span.
  function drawAxis(w, X) {
    axis.replaceChildren();
    const span = view.t1 - view.t0, want = Math.max(2, Math.floor(w / 110));
    const raw = span / want, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
    const [div, unit] = span >= 1e6 ? [1e6, "s"] : span >= 1e3 ? [1e3, "ms"] : span >= 1 ? [1, "us"] : [1e-3, "ns"];
    const digits = Math.max(0, Math.ceil(-Math.log10(step / div) - 1e-9));
    for (let i = Math.ceil(view.t0 / step - 1e-9); i * step <= view.t1 + step * 1e-9; i++) {
      const x = X(i * step); if (x < -0.5 || x > w + 0.5) continue;
      const mark = el("div", "mark"); mark.style.left = x + "px";
      const label = el("span", "tick-label", Number((i * step / div).toFixed(digits)) + " " + unit);
      label.style.left = x + "px"; label.style.transform = x < 20 ? "none" : x > w - 30 ? "translateX(-100%)" : "translateX(-50%)";
      axis.append(mark, label);
    }
  }
  let dragTo = null;
  const tAt = x => view.t0 + x / canvas.clientWidth * (view.t1 - view.t0);
  function hover(ev) {
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top, t = tAt(x), b = (H - pad - y) / (H - 2 * pad) * maxY;
    const part = parts.find(p => t >= p.t0 && t < p.t1) || parts[0], segs = part.layer.segs;
    const k = lowerBound(segs, t, s => s.t1); const sg = segs[k];
    if (!sg || t < sg.t0 || b < 0) { tip.style.display = "none"; return; }
    let text = null;
    for (const [i, y0, y1] of sg.rects) if (b >= y0 && b < y1) { const s = part.layer.list[i]; text = fmtBytes(s.bytes) + " " + s.kind + " at " + s.addr + "\nallocated " + fmtUs(s.start) + (s.live_at_end ? ", still live at the end" : ", freed " + fmtUs(s.end)) + "\n" + (data.stacks[s.stack] || []).slice(0, 12).join("\n"); }
    if (text === null && b < sg.base) text = "other allocations merged: " + fmtBytes(sg.base) + " live";
    if (text === null) { tip.style.display = "none"; return; }
    const j = Math.min(lowerBound(kernels, t, q => q[0]), kernels.length - 1);
    if (j >= 0) { let best = j; if (j > 0 && Math.abs(kernels[j - 1][0] - t) < Math.abs(kernels[j][0] - t)) best = j - 1; const q = kernels[best]; text += "\nkernel nearby: " + data.kernel_names[q[2]] + " (" + fmtUs(q[0]) + ", " + fmtUs(q[1] - q[0]) + ")"; }
    tip.textContent = "at " + fmtUs(t) + ": " + text; tip.style.display = "block";
    tip.style.left = Math.min(x + 14, Math.max(0, canvas.clientWidth - 420)) + "px"; tip.style.top = (canvas.offsetTop + y + 14) + "px";
  }
  canvas.addEventListener("mousedown", ev => { dragFrom = ev.offsetX; dragTo = null; });
  canvas.addEventListener("mousemove", ev => { if (dragFrom !== null) { dragTo = ev.offsetX; draw(); } hover(ev); });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  window.addEventListener("mouseup", () => { if (dragFrom !== null && dragTo !== null && Math.abs(dragTo - dragFrom) > 4) { const a = tAt(Math.min(dragFrom, dragTo)), b = tAt(Math.max(dragFrom, dragTo)); view = { t0: a, t1: b }; } dragFrom = dragTo = null; draw(); });
  canvas.addEventListener("wheel", ev => { ev.preventDefault(); const t = tAt(ev.offsetX), f = ev.deltaY > 0 ? 1.25 : 0.8; const w = Math.min((view.t1 - view.t0) * f, full.t1 - full.t0); let a = t - (t - view.t0) * w / (view.t1 - view.t0); a = Math.max(full.t0, Math.min(a, full.t1 - w)); view = { t0: a, t1: a + w }; draw(); }, { passive: false });
  const zoomOut = () => { view = { t0: full.t0, t1: full.t1 }; draw(); };
  canvas.addEventListener("dblclick", zoomOut); reset.addEventListener("click", zoomOut); window.addEventListener("resize", draw);
  draw();
}
const tl = document.getElementById("gd-timelines"); let total = 0;
for (const dev of data.devices) { if (!dev.series.length && !dev.other.length) continue; Timeline(tl, dev); total += dev.series.length + (dev.other.length ? 1 : 0); }
if (!total) tl.append(el("p", "", "No allocations in this trace."));
tl.dataset.seriesTotal = String(total);
document.body.dataset.ready = "1";
})();
