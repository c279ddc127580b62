// Hourglass console: the charts (uPlot) and the message browser's follow-live toggle.
"use strict";

function fmtBytes(v) {
  if (v == null) return "";
  const u = ["B/s", "KiB/s", "MiB/s", "GiB/s"]; let i = 0;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : Math.round(v)) + " " + u[i];
}

// every time on the console is UTC, the charts' axes too
const utc = ts => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");

function noSamples(el, why) {
  const p = document.createElement("p");
  p.className = "hint"; p.textContent = "No samples yet: " + why + ".";
  el.appendChild(p);
}

function chartWidth(el) { return Math.max(el.clientWidth - 16, 300); }

async function ratesChart(el) {
  const d = await (await fetch(el.dataset.src, {credentials: "same-origin"})).json();
  const opts = {
    width: chartWidth(el), height: 240, tzDate: utc,
    series: [{}, {label: "produce (bytes in)", stroke: "#7b4fd6", width: 2, value: (u, v) => fmtBytes(v)},
                 {label: "fetch (bytes out)", stroke: "#1f9d8b", width: 2, value: (u, v) => fmtBytes(v)}],
    axes: [{}, {values: (u, vals) => vals.map(fmtBytes), size: 80}],
    scales: {y: {range: (u, a, b) => [0, Math.max(b, 100) * 1.1]}},
  };
  const now = Date.now() / 1000;
  // the last 15 minutes at most, 2 at least: a young broker's few samples stay readable
  const lo = Math.max(Math.min(d.t.length ? d.t[0] : now, now - 120), now - 900);
  opts.scales.x = {time: true, range: [lo, now]};
  el.innerHTML = "";
  el._plot = new uPlot(opts, [d.t, d.bytes_in, d.bytes_out], el);
  if (!d.t.length) noSamples(el, "the broker samples its counters every 5 s");
}

async function lagChart(el) {
  const d = await (await fetch(el.dataset.src, {credentials: "same-origin"})).json();
  const palette = ["#1f9d8b", "#e07b39", "#3b7dd8", "#c94f7c", "#6a9a23", "#8c6bb1"];
  const series = [{}, {label: "total lag", stroke: "#7b4fd6", width: 2, points: {show: true, size: 5}}];
  const data = [d.t, d.total];
  Object.keys(d.partitions).slice(0, 12).forEach((k, i) => {
    series.push({label: k, stroke: palette[i % palette.length], width: 1, points: {show: true, size: 4}});
    data.push(d.partitions[k]);
  });
  el.innerHTML = "";
  // the last hour at most, 5 minutes at least
  const now = Date.now() / 1000, lo = Math.max(Math.min(d.t.length ? d.t[0] : now, now - 300), now - 3600);
  el._plot = new uPlot({width: chartWidth(el), height: 240, series: series, tzDate: utc,
                        scales: {x: {time: true, range: [lo, now]}, y: {range: (u, a, b) => [0, Math.max(b, 10) * 1.1]}},
                        axes: [{}, {label: "records", size: 70}]}, data, el);
  if (!d.t.length) noSamples(el, "the broker samples lags every 10 s");
}

// The segment timeline: each segment a stroke from (min timestamp, base offset) to (max timestamp,
// last offset) on a time axis; the retention horizon and "now" as vertical lines (or, when far
// outside the data's span, as a labelled arrow at that edge so the segments stay readable).
function timelineChart(el) {
  const d = JSON.parse(document.getElementById("timeline-data").textContent);
  const segs = d.segments.filter(s => s.max_ts != null).slice(-200);
  if (!segs.length) { el.innerHTML = '<p class="hint">No records yet: the segments have no timestamps to place.</p>'; return; }
  const xs = Array.from(new Set(segs.flatMap(s => [s.min_ts ?? s.max_ts, s.max_ts]))).sort((a, b) => a - b);
  const idx = new Map(xs.map((x, i) => [x, i]));
  const data = [xs.map(x => x / 1000)];
  const series = [{}];
  const kept = ["#7b4fd6", "#1f9d8b"], doomed = ["#e07b39", "#b3261e"];
  segs.forEach((s, i) => {
    const ys = new Array(xs.length).fill(null);
    const a = s.min_ts ?? s.max_ts;
    ys[idx.get(a)] = s.base_offset;
    ys[idx.get(s.max_ts)] = Math.max(s.next_offset - 1, s.base_offset);
    data.push(ys);
    const what = s.deleted_next ? ", deleted next" : (s.active ? ", active" : "");
    series.push({label: `${s.base_offset} (${s.size} B${what})`, spanGaps: true, width: 6,
                 stroke: (s.deleted_next ? doomed : kept)[i % 2], points: {show: true, size: 7}});
  });
  const first = xs[0], last = xs[xs.length - 1], span = Math.max(last - first, 60000);
  let lo = first, hi = last;
  const marks = [[d.now_ms, "now", "#1d2430"]];
  if (d.horizon_ms != null) marks.push([d.horizon_ms, "retention horizon", "#b3261e"]);
  marks.forEach(([ms]) => { if (ms >= first - span && ms <= last + span) { lo = Math.min(lo, ms); hi = Math.max(hi, ms); } });
  const pad = (hi - lo) * 0.04 + 1000;
  lo -= pad; hi += pad;
  const fmt = ms => new Date(ms).toISOString().replace("T", " ").slice(0, 16) + "Z";
  el.innerHTML = "";
  el._plot = new uPlot({
    width: chartWidth(el), height: 280, tzDate: utc, legend: {show: segs.length <= 12},
    scales: {x: {time: true, range: [lo / 1000, hi / 1000]}},
    axes: [{}, {label: "offset", size: 80}],
    series: series,
    hooks: {draw: [u => {
      const ctx = u.ctx, px = devicePixelRatio;
      marks.forEach(([ms, label, color], k) => {
        ctx.save(); ctx.strokeStyle = color; ctx.fillStyle = color; ctx.lineWidth = 1.5 * px;
        ctx.font = `${11 * px}px system-ui`;
        const y = u.bbox.top + (12 + 14 * k) * px;
        if (ms < lo || ms > hi) {  // off the chart: an arrow at that edge
          const right = ms > hi, text = `${label} ${right ? "→" : "←"} ${fmt(ms)}`;
          const w = ctx.measureText(text).width;
          ctx.fillText(text, right ? u.bbox.left + u.bbox.width - w - 4 * px : u.bbox.left + 4 * px, y);
        } else {
          const x = u.valToPos(ms / 1000, "x", true);
          ctx.setLineDash([6, 4]);
          ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
          ctx.setLineDash([]); ctx.fillText(label, x + 4 * px, y);
        }
        ctx.restore();
      });
    }]},
  }, data, el);
}

function toggleFollow(box) {
  const body = document.getElementById("records-body");
  body.querySelectorAll("tr.poller").forEach(tr => tr.remove());
  if (!box.checked) return;
  const more = document.getElementById("more-row"); if (more) more.remove();
  const marks = body.querySelectorAll("tr.positions");
  const pos = marks.length ? marks[marks.length - 1].dataset.next : "";
  const tr = document.createElement("tr");
  tr.className = "poller";
  tr.setAttribute("hx-get", box.dataset.src + "&pos=" + encodeURIComponent(pos));
  tr.setAttribute("hx-trigger", "load, every 1s");
  tr.setAttribute("hx-swap", "outerHTML");
  tr.innerHTML = '<td colspan="6" class="hint">following…</td>';
  body.appendChild(tr);
  htmx.process(tr);
}

function editConfig(btn) {
  document.getElementById("config-name").value = btn.dataset.name;
  const v = document.getElementById("config-value"); v.value = btn.dataset.value; v.focus();
}

document.addEventListener("DOMContentLoaded", () => {
  const r = document.getElementById("rates-chart"); if (r) { ratesChart(r); setInterval(() => ratesChart(r), 5000); }
  const l = document.getElementById("lag-chart"); if (l) { lagChart(l); setInterval(() => lagChart(l), 5000); }
  const t = document.getElementById("timeline-chart"); if (t) timelineChart(t);
});
