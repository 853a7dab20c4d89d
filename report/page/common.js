// What both pages (report.js, job.js) use, spliced in before each: nodes
// made with textContent only, and the units every page writes.
"use strict";
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = String(text); return e; }
function fmtBytes(b) { const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; } return (i ? b.toFixed(b < 10 ? 2 : 1) : String(b)) + " " + u[i]; }
function fmtUs(us) { if (us < 1) return (us * 1000).toFixed(0) + " ns"; if (us < 1000) return us.toFixed(1) + " us"; if (us < 1e6) return (us / 1000).toFixed(2) + " ms"; return (us / 1e6).toFixed(2) + " s"; }
// The module only where there is no file: beside a file and line it is noise.
function frameText(f) { return (f.function || f.address || "?") + (f.file ? " " + f.file + ":" + (f.line || 0) : f.module ? " (" + f.module + ")" : ""); }
