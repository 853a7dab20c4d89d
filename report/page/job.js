// The job page's script, after common.js (its "use strict" holds for both).
(function () {
const data = JSON.parse(document.getElementById("gd-data").textContent);
const sentence = m => m.charAt(0).toUpperCase() + m.slice(1) + (m.endsWith(".") ? "" : ".");

document.getElementById("gd-meta").textContent = data.summary;
const warnings = document.getElementById("gd-warnings");
for (const w of data.problems) warnings.append(el("div", "warn", sentence(w)));

// The job's own findings lead: the first failure, the desync, the straggler, the missing ranks.
const job = document.getElementById("gd-job");
if (!data.facts.length) job.append(el("p", "", "No failure, desync, straggler or missing rank."));
for (const f of data.facts) {
  const box = el("div", f.severity === "error" ? "crash" : "finding");
  box.append(el("span", "sev sev-" + f.severity, f.id), document.createTextNode(sentence(f.message)));
  for (const s of f.stacks || []) box.append(el("div", "stack", s.label + "\n" + s.frames.map(frameText).join("\n")));
  job.append(box);
}

const fsec = document.getElementById("gd-findings");
document.getElementById("gd-findings-title").textContent = "Findings: " + data.findings.length;
if (!data.findings.length) fsec.append(el("p", "", "No findings."));
for (const f of data.findings) {
  const box = el("div", "finding");
  const head = el("div", "");
  head.append(el("span", "sev sev-" + f.severity, f.severity), document.createTextNode(f.rule + " on " + f.where));
  box.append(head, el("div", "", f.message));
  if (f.stack && f.stack.length) box.append(el("div", "stack", f.stack.slice(0, 4).map(frameText).join("\n")));
  fsec.append(box);
}

// Ranks over time: one canvas row per rank.
const rows = document.getElementById("gd-rows");
const span = Math.max(1, data.end_us - data.begin_us);
const tip = el("div", "tip"); rows.style.position = "relative"; rows.append(tip);
for (const r of data.ranks) {
  const line = el("div", ""); line.style.display = "flex"; line.style.alignItems = "center"; line.style.margin = "2px 0";
  const label = el("div", "", r.name); label.style.width = "90px"; label.style.fontSize = "12px";
  const canvas = document.createElement("canvas"); canvas.width = 1200; canvas.height = 18;
  canvas.style.width = "100%"; canvas.style.height = "18px"; canvas.style.border = "1px solid #dde1e8";
  line.append(label, canvas); rows.append(line);
  const ctx = canvas.getContext("2d");
  const x = us => (us - data.begin_us) / span * canvas.width;
  ctx.fillStyle = "#f0f1f4"; ctx.fillRect(x(r.begin_us), 0, Math.max(1, x(r.end_us) - x(r.begin_us)), 18);
  r.steps.forEach((s, i) => { ctx.fillStyle = i % 2 ? "#c9ced8" : "#e1e4ea"; ctx.fillRect(x(s[0]), 0, Math.max(1, x(s[1]) - x(s[0])), 18); });
  ctx.fillStyle = "#1e6fd9";
  for (const c of r.collectives) ctx.fillRect(x(c[0]), 5, Math.max(1, x(c[1]) - x(c[0])), 8);
  if (r.failure_us !== null) { ctx.fillStyle = "#c62828"; ctx.fillRect(x(r.failure_us) - 1, 0, 3, 18); }
  canvas.addEventListener("mousemove", ev => {
    const box = canvas.getBoundingClientRect();
    const t = data.begin_us + (ev.clientX - box.left) / box.width * span;
    let text = r.name + " at " + fmtUs(t - data.begin_us);
    const c = r.collectives.find(c => c[0] <= t && t <= c[1]);
    if (c) text += "\nin " + r.collective_labels[c[2]] + " for " + fmtUs(c[1] - c[0]);
    const s = r.steps.find(s => s[0] <= t && t <= s[1]);
    if (s) text += "\nstep " + s[2] + " (" + fmtUs(s[1] - s[0]) + ")";
    if (r.failure_us !== null && Math.abs(t - r.failure_us) < span / 200) text += "\n" + r.failure;
    tip.textContent = text; tip.style.display = "block";
    tip.style.left = (ev.clientX - rows.getBoundingClientRect().left + 12) + "px";
    tip.style.top = (ev.clientY - rows.getBoundingClientRect().top + 12) + "px";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
}

// Per rank: the numbers, and a link to each rank's own page.
const table = el("table", "");
const head = el("tr", "");
for (const h of ["rank", "steps", "median step", "own work", "in collectives", "data loading", "peak memory", "GPU idle", "exposed comm.", "ended", "page"]) head.append(el("th", "", h));
table.append(head);
for (const r of data.ranks) {
  const tr = el("tr", "");
  const cells = [r.name, r.step_count, fmtUs(r.median_step_us), fmtUs(r.median_own_us), fmtUs(r.median_collective_us), fmtUs(r.median_data_loading_us),
    r.peak_bytes ? fmtBytes(r.peak_bytes) : "-", r.gpu_idle, r.exposed_comm, r.ended];
  for (const c of cells) tr.append(el("td", "", c));
  const link = el("td", "");
  if (r.page) { const a = el("a", "", "report"); a.href = r.page; link.append(a); } else link.textContent = "-";
  tr.append(link);
  table.append(tr);
}
document.getElementById("gd-ranks").append(table);
})();
