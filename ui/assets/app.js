// cosched's page: a view of the agents' API kept current by server-sent
// events (/ui/events). Everything is built with textContent: job names and
// users are other people's input.
"use strict";

const S = { state: null, seq: 0, row: -1, me: null, cells: [], openJob: 0, live: null };

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function color(id) { return `hsl(${(id * 137) % 360}, 55%, 42%)`; }

function dur(ns) { // a Go duration in nanoseconds, shown briefly
  if (ns == null) return "";
  if (ns >= 1e9) return (ns / 1e9).toFixed(2) + " s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
  return (ns / 1e3).toFixed(0) + " µs";
}

// goDur reads a Go duration string ("1h2m3.5s", "250ms") into seconds.
function goDur(s) {
  if (!s) return 0;
  const unit = { h: 3600, m: 60, s: 1, ms: 1e-3, "µs": 1e-6, us: 1e-6, ns: 1e-9 };
  let t = 0;
  for (const [, n, u] of String(s).matchAll(/([0-9.]+)(h|ms|m|µs|us|ns|s)/g)) t += parseFloat(n) * unit[u];
  return t;
}

// slurmTime shows seconds as squeue does: [D-][H:]M:SS.
function slurmTime(sec) {
  sec = Math.floor(sec);
  const d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600), m = Math.floor(sec % 3600 / 60), s = sec % 60;
  const ss = String(s).padStart(2, "0");
  if (d) return `${d}-${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${ss}`;
  if (h) return `${h}:${String(m).padStart(2, "0")}:${ss}`;
  return `${m}:${ss}`;
}

function mpl(st) {
  const c = st.nodes && st.nodes.cluster;
  let n = c && c.mpl ? c.mpl : 1;
  for (const j of st.jobs || []) for (const r of (j.rows || [j.row])) n = Math.max(n, r + 1);
  return n;
}

// renderMatrix draws one cell per (row, processor column): data-node,
// data-row and data-job (empty when free); cells of the current row carry
// data-current="true".
function renderMatrix(st) {
  const t = document.getElementById("matrix");
  const nodes = ((st.nodes && st.nodes.nodes) || []).filter(n => (n.columns || []).length > 0);
  const rows = mpl(st);
  const at = new Map(); // "row/col" -> [job, alternate?]
  for (const j of st.jobs || []) {
    if (j.state !== "RUNNING" || !j.columns) continue;
    for (const r of (j.rows && j.rows.length ? j.rows : [j.row])) {
      for (const c of j.columns) at.set(r + "/" + c, [j, r !== j.row]);
    }
  }
  // Cells that lent their processor to another row's rank (BCS slot
  // reuse): "row/col" -> the lends.
  const lent = new Map();
  for (const l of st.lent || []) lent.set(l.row + "/" + l.column, l);
  const head1 = el("tr", {}, el("th", {}, ""));
  const head2 = el("tr", {}, el("th", {}, "row"));
  for (const n of nodes) {
    head1.append(el("th", { colspan: n.columns.length, title: n.state }, n.name + (n.leader ? " ★" : "")));
    for (const c of n.columns) head2.append(el("th", {}, c));
  }
  const body = [head1, head2];
  S.cells = [];
  for (let r = 0; r < rows; r++) {
    const tr = el("tr", { "data-row": r }, el("th", { class: "rowlabel" }, r));
    const cells = [];
    for (const n of nodes) {
      for (const c of n.columns) {
        const hit = at.get(r + "/" + c);
        const td = el("td", { "data-node": n.name, "data-row": r, "data-col": c, "data-job": hit ? hit[0].id : "" });
        if (hit) {
          td.textContent = hit[0].id;
          td.style.background = color(hit[0].id);
          td.title = `job ${hit[0].id} ${hit[0].spec.name || ""} (${hit[0].spec.user || "?"})` + (hit[1] ? ", in an alternate row" : "");
          if (hit[1]) td.setAttribute("data-alt", "true");
          const id = hit[0].id;
          td.addEventListener("click", () => openJob(id));
        }
        const l = lent.get(r + "/" + c);
        if (l) {
          td.setAttribute("data-lends", l.count);
          if (l.recent > 0) td.setAttribute("data-lent", "true");
          td.title = (td.title ? td.title + "; " : `free in row ${r}; `) +
            `lent its processor to another row's rank ${l.count} times (${l.recent} lately)`;
        }
        tr.append(td);
        cells.push(td);
      }
    }
    S.cells.push({ tr, cells });
    body.push(tr);
  }
  t.replaceChildren(...body);
  markCurrent();
}

function markCurrent() {
  S.cells.forEach(({ tr, cells }, r) => {
    const cur = r === S.row;
    tr.classList.toggle("current", cur);
    for (const td of cells) {
      if (cur) td.setAttribute("data-current", "true");
      else td.removeAttribute("data-current");
    }
  });
}

function renderQueue(st) {
  const tb = document.querySelector("#queue tbody");
  const rows = [];
  for (const j of st.jobs || []) {
    const st8 = { PENDING: "PD", RUNNING: "R", COMPLETED: "CD", FAILED: "F", CANCELLED: "CA", TIMEOUT: "TO" }[j.state] || j.state;
    const where = j.state === "PENDING" ? `(${j.reason || "Priority"})` : [...new Set(j.nodes || [])].join(",");
    const id = j.id;
    rows.push(el("tr", { "data-job": id },
      el("td", { class: "link", onclick: () => openJob(id) }, id), el("td", {}, j.spec.name || ""), el("td", {}, j.spec.user || ""),
      el("td", {}, st8), el("td", {}, slurmTime(goDur(j.elapsed))), el("td", {}, slurmTime(goDur(j.spec.time_limit))), el("td", {}, j.spec.processors),
      el("td", {}, j.state === "RUNNING" ? j.row : ""), el("td", {}, where)));
  }
  tb.replaceChildren(...rows);
}

function renderNodes(st) {
  const tb = document.querySelector("#nodes tbody");
  const rows = [];
  for (const n of (st.nodes && st.nodes.nodes) || []) {
    const s = n.stats && n.stats.strobe;
    const role = n.leader ? "controller (leader)" : n.controller ? "controller" : "";
    rows.push(el("tr", { "data-node": n.name },
      el("td", {}, n.name), el("td", {}, n.state), el("td", {}, role), el("td", {}, n.cpus),
      el("td", {}, (n.columns || []).join(",")), el("td", {}, (n.jobs || []).join(",")),
      el("td", {}, s ? s.applied : ""), el("td", {}, s ? s.lost : ""), el("td", {}, s ? s.late : ""),
      el("td", {}, n.stats ? n.stats.slot_reuses : ""), el("td", {}, s && s.switch_cost ? dur(s.switch_cost.p99) : "")));
  }
  tb.replaceChildren(...rows);
  const k = st.nodes && st.nodes.skew;
  document.getElementById("skew").textContent = k && k.slices ?
    `switch skew over the last ${k.slices} slices: p50 ${dur(k.skew.p50)}, p99 ${dur(k.skew.p99)}, max ${dur(k.skew.max)}; strobe latency p99 ${dur(k.latency.p99)}` : "";
  const c = st.nodes && st.nodes.cluster;
  document.getElementById("cluster").textContent = c ?
    `${c.mode}, ${c.policy}, MPL ${c.mpl}, slice ${c.slice}, ${c.processors_online} processors` : "";
}

const ROW_COLORS = ["#2a9d6f", "#7b4bb7", "#d9822b", "#3b7dd8", "#c2417a", "#8a9a2b", "#2bb3c0", "#a0522d"];
function rowColor(r) { return ROW_COLORS[r % ROW_COLORS.length]; }

function svgEl(tag, attrs, ...kids) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function secs(us) { // µs shown briefly
  const a = Math.abs(us);
  if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 0 : 1) + " s";
  if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 0 : 1) + " ms";
  return us.toFixed(0) + " µs";
}

// renderTimeline draws the Gantt chart of the last slices as SVG: a lane
// per node (g[data-node]) of segments (rect[data-row]) coloured by the
// row the node ran, then the switch skew of each slice as a band (its
// height the skew, on its own scale), and the time axis.
function renderTimeline(tl, n, count) {
  const st = S.state || {};
  const svg = document.getElementById("timeline"), note = document.getElementById("tlnote");
  if (!tl || !tl.lanes || !tl.lanes.length) return;
  // For tests and scripts: the event drawn and the slices in it.
  svg.dataset.n = n;
  svg.dataset.slices = count;
  const sig = tl.span_us + "/" + tl.lanes.map(l => l.seqs[l.seqs.length - 1] + ":" + l.t.length).join(",");
  if (sig === S.tlSig) return;
  S.tlSig = sig;
  const W = 1000, L = 56, R = 8, LANE = 18, GAP = 4, SKEW = 34;
  const span = Math.max(tl.span_us, 1), PW = W - L - R;
  const x = t => L + PW * (t + span) / span;
  const kids = [];
  let y = 4;
  for (const lane of tl.lanes) {
    const g = svgEl("g", { "data-node": lane.node });
    g.append(svgEl("text", { x: L - 6, y: y + LANE - 5, "text-anchor": "end", class: "tl-label" }, lane.node));
    // Consecutive slices of one row make one segment.
    for (let i = 0; i < lane.t.length;) {
      let j = i + 1;
      while (j < lane.t.length && lane.rows[j] === lane.rows[i]) j++;
      const x0 = x(lane.t[i]), x1 = j < lane.t.length ? x(lane.t[j]) : x(0);
      const r = svgEl("rect", { x: x0.toFixed(2), y, width: Math.max(x1 - x0, 0.5).toFixed(2), height: LANE, fill: rowColor(lane.rows[i]),
        "data-row": lane.rows[i], "data-seq": lane.seqs[i] });
      r.append(svgEl("title", {}, `${lane.node}: row ${lane.rows[i]}, slice ${lane.seqs[i]}${j - i > 1 ? "–" + lane.seqs[j - 1] : ""}, from ${secs(lane.t[i])}`));
      g.append(r);
      i = j;
    }
    kids.push(g);
    y += LANE + GAP;
  }
  // The skew band: per slice, from its first to its last node's switch.
  const skews = (tl.skew || []).map(([a, b]) => b - a);
  const maxSkew = Math.max(1, ...skews);
  const base = y + SKEW;
  const band = svgEl("g", { "data-testid": "skew-band" });
  band.append(svgEl("text", { x: L - 6, y: base - 4, "text-anchor": "end", class: "tl-label" }, "skew"));
  let pts = `${L},${base} `;
  for (const [a, b] of tl.skew || []) pts += `${x(a).toFixed(1)},${(base - SKEW * (b - a) / maxSkew).toFixed(1)} `;
  pts += `${x(0)},${base}`;
  band.append(svgEl("polyline", { points: pts, class: "tl-skew" }));
  band.append(svgEl("line", { x1: L, x2: W - R, y1: base, y2: base, class: "tl-axis" }));
  band.append(svgEl("text", { x: W - R, y: y + 9, "text-anchor": "end", class: "tl-label" }, "max " + secs(maxSkew)));
  kids.push(band);
  // The axis: a few round ticks back from now.
  const step = [1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 3e7, 6e7, 12e7].find(s => span / s <= 6) || 3e8;
  for (let t = 0; t <= span; t += step) {
    kids.push(svgEl("line", { x1: x(-t), x2: x(-t), y1: base, y2: base + 4, class: "tl-axis" }));
    kids.push(svgEl("text", { x: x(-t), y: base + 15, "text-anchor": t === 0 ? "end" : "middle", class: "tl-label" }, t === 0 ? "now" : "−" + secs(t)));
  }
  const H = base + 20;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("height", H);
  svg.replaceChildren(...kids);
  const rows = [...new Set(tl.lanes.flatMap(l => l.rows))].sort((a, b) => a - b);
  note.replaceChildren(`the last ${secs(tl.span_us)}, ${Math.max(...tl.lanes.map(l => l.t.length))} slices; rows: `,
    ...rows.map(r => {
      const jobs = (st.jobs || []).filter(j => j.state === "RUNNING" && (j.rows && j.rows.length ? j.rows : [j.row]).includes(r)).map(j => j.id);
      return el("span", { class: "tl-key" }, el("i", { "data-row": r }), `${r}` + (jobs.length ? ` (now job ${jobs.join(", ")})` : "") + " ");
    }));
  for (const i of note.querySelectorAll("i[data-row]")) i.style.background = rowColor(+i.dataset.row);
}

// The timeline arrives in numbered events: the full form (a new stream's
// first, or after the hub started again) or the records since the event
// before (a delta), which the page adds to its own. A page that missed a
// number asks for the full form once (GET /ui/timeline) and goes on from
// its number.
function onTimeline(ev) {
  if (ev.full) { applyTimeline(ev); return; }
  if (S.tlFetch) { S.tlNext = ev; return; } // the full form is on its way
  if (S.tl && ev.n <= S.tl.n) return;
  if (S.tl && ev.n === S.tl.n + 1) { applyTimeline(ev); return; }
  S.tlFetch = true;
  S.tlFetches = (S.tlFetches || 0) + 1;
  document.getElementById("timeline").dataset.fetches = S.tlFetches;
  fetch("/ui/timeline", { credentials: "same-origin" }).then(r => r.ok ? r.json() : Promise.reject(new Error(r.statusText)))
    .then(full => {
      applyTimeline(full);
      const next = S.tlNext;
      if (next && next.n === S.tl.n + 1) applyTimeline(next);
    })
    .catch(() => { S.tl = null; }) // the next event asks again
    .finally(() => { S.tlFetch = false; S.tlNext = null; });
}

// applyTimeline adds an event's records (replacing them all if it is the
// full form), keeps the newest max slices and draws them.
function applyTimeline(ev) {
  if (ev.full || !S.tl) S.tl = { n: 0, slices: new Map() };
  const tl = S.tl;
  tl.n = ev.n;
  let id = 0, t = 0, seq = 0;
  for (const [di, row, ni, dt, ds] of ev.recs) {
    id += di; t += dt; seq += ds;
    let s = tl.slices.get(id);
    if (!s) { s = { id, seq, row, at: new Map() }; tl.slices.set(id, s); }
    s.at.set(ev.nodes[ni], t);
  }
  const all = [...tl.slices.values()];
  for (const s of all) s.min = Math.min(...s.at.values());
  all.sort((a, b) => a.min - b.min || a.id - b.id);
  for (const s of all.splice(0, Math.max(0, all.length - ev.max))) tl.slices.delete(s.id);
  renderTimeline(timelineView(all), tl.n, all.length);
}

// timelineView turns slices (in time order) into lanes of switches per
// node and the skew per slice, in µs before the newest switch.
function timelineView(all) {
  if (!all.length) return null;
  let end = -Infinity;
  for (const s of all) for (const at of s.at.values()) end = Math.max(end, at);
  const lanes = new Map(), skew = [];
  for (const s of all) {
    let last = -Infinity;
    for (const [node, at] of s.at) {
      if (!lanes.has(node)) lanes.set(node, []);
      lanes.get(node).push([at - end, s.row, s.seq]);
      last = Math.max(last, at);
    }
    if (s.at.size >= 2) skew.push([s.min - end, last - end]);
  }
  const out = [...lanes.keys()].sort().map(node => {
    const sw = lanes.get(node).sort((a, b) => a[0] - b[0]);
    return { node, t: sw.map(x => x[0]), rows: sw.map(x => x[1]), seqs: sw.map(x => x[2]) };
  });
  return { lanes: out, skew, span_us: end - all[0].min };
}

function render(st) {
  S.state = st;
  renderMatrix(st);
  renderQueue(st);
  renderNodes(st);
  const stale = document.getElementById("stale");
  stale.hidden = !st.error;
  stale.textContent = st.error ? "not current: " + st.error : "";
  if (S.openJob) refreshJob();
}

async function openJob(id) {
  S.openJob = id;
  startLive(id);
  document.getElementById("jobpanel").hidden = false;
  document.getElementById("jobid").textContent = id;
  await refreshJob();
}

async function refreshJob() {
  const id = S.openJob;
  const body = document.getElementById("jobbody");
  const pub = (S.state && S.state.jobs || []).find(j => j.id === id);
  const r = await fetch(`/v1/jobs/${id}`, { credentials: "same-origin" });
  const out = [];
  if (pub) out.push(el("p", {}, `${pub.state} · ${pub.spec.user || ""} · ${pub.spec.processors} processors · row ${pub.row}`));
  if (r.status === 403 || r.status === 404) {
    const e = await r.json().catch(() => ({ error: r.statusText }));
    out.push(el("p", { "data-testid": "job-denied", class: "note" }, e.error));
  } else if (r.ok) {
    const j = await r.json();
    out.push(el("p", { "data-testid": "job-command" }, "command: " + (j.spec.bench ? "bench " + j.spec.bench : (j.spec.command || []).join(" "))));
    if (j.reason) out.push(el("p", {}, "reason: " + j.reason));
    if (j.usage) out.push(el("p", {}, `cgroups: CPU ${j.usage.cpu_time}, peak memory ${(j.usage.peak_memory / 1048576).toFixed(1)} MiB`));
    const ranks = el("table", { class: "grid", "data-testid": "ranks" },
      el("tr", {}, ...["RANK", "NODE", "PID", "EXITED", "CODE", "CPU", "MAX RSS", "ERROR"].map(h => el("th", {}, h))));
    for (const k of j.ranks || []) {
      ranks.append(el("tr", {}, el("td", {}, k.rank), el("td", {}, k.node), el("td", {}, k.pid || ""), el("td", {}, k.exited ? "yes" : ""),
        el("td", {}, k.exited ? k.code : ""), el("td", {}, k.cpu_time), el("td", {}, k.max_rss || ""), el("td", {}, k.error || "")));
    }
    out.push(ranks);
    // The end of the first ranks' output (the agents keep it on their nodes).
    for (const k of (j.ranks || []).slice(0, 4)) {
      const o = await fetch(`/v1/jobs/${id}/output?rank=${k.rank}`, { credentials: "same-origin" });
      const text = o.ok ? await o.text() : "(" + ((await o.json().catch(() => ({}))).error || o.statusText) + ")";
      out.push(el("h3", {}, `rank ${k.rank} output (${k.node})`), el("pre", { "data-testid": "output", "data-rank": k.rank }, text || "(none yet)"));
    }
    if (j.state === "PENDING" || j.state === "RUNNING") {
      out.push(el("button", { type: "button", "data-testid": "cancel", onclick: () => cancelJob(id) }, "cancel job " + id));
    }
  } else {
    out.push(el("p", { class: "stale" }, `GET /v1/jobs/${id}: ${r.status}`));
  }
  if (S.openJob === id) body.replaceChildren(...out);
}

async function cancelJob(id) {
  const r = await fetch(`/v1/jobs/${id}`, { method: "DELETE", credentials: "same-origin", headers: { "X-Cosched-UI": "1" } });
  if (!r.ok) {
    const e = await r.json().catch(() => ({ error: r.statusText }));
    alert(e.error);
  }
  refreshJob();
}

// The job page's live part: every LIVE_EVERY the state of the job's ranks
// in the slice each node is in and its cgroups' figures (GET
// /v1/jobs/ID/live, its owner's and operators' only), while the page is
// open on a running job. 750 ms is not a multiple of common slices, so
// successive readings fall on different rows.
const LIVE_EVERY = 750;
const LIVE_KEEP = 40; // readings kept per rank for its strip

function startLive(id) {
  if (S.live) clearTimeout(S.live.timer);
  document.getElementById("joblive").replaceChildren();
  S.live = id ? { id, prev: new Map(), hist: new Map(), timer: 0 } : null;
  if (id) pollLive(S.live);
}

async function pollLive(L) {
  if (S.live !== L) return;
  let again = true;
  try {
    const r = await fetch(`/v1/jobs/${L.id}/live`, { credentials: "same-origin" });
    if (r.ok) {
      const live = await r.json();
      if (S.live === L) renderLive(L, live);
      again = live.state === "RUNNING" || live.state === "PENDING";
    } else {
      again = r.status !== 403 && r.status !== 404; // not yours: nothing to show
    }
  } catch (e) { /* the agent is away: try again */ }
  if (again && S.live === L) L.timer = setTimeout(() => pollLive(L), LIVE_EVERY);
}

function mib(b) { return (b / 1048576).toFixed(1) + " MiB"; }

function renderLive(L, live) {
  const out = [];
  if (!live.nodes.length) {
    out.push(el("p", { class: "note" }, `no rank runs now (${live.state})`));
    document.getElementById("joblive").replaceChildren(...out);
    return;
  }
  const ranks = el("table", { class: "grid", "data-testid": "rank-states" },
    el("tr", {}, ...["RANK", "NODE", "NOW", "SLICE (ROW)", "LAST READINGS"].map(h => el("th", {}, h))));
  const rows = [];
  for (const n of live.nodes) {
    for (const k of n.ranks || []) {
      const h = L.hist.get(k.rank) || [];
      if (!h.length || h[h.length - 1].seq !== n.seq) h.push({ seq: n.seq, state: k.reusing ? "reusing" : k.state });
      while (h.length > LIVE_KEEP) h.shift();
      L.hist.set(k.rank, h);
      const strip = el("span", { class: "strip" }, ...h.map(x => el("i", { class: "st-" + x.state, title: `slice ${x.seq}: ${x.state}` })));
      rows.push([k.rank, el("tr", { "data-rank": k.rank, "data-node": n.node, "data-state": k.state, "data-seq": n.seq },
        el("td", {}, k.rank), el("td", {}, n.node),
        el("td", { class: "st-text st-" + k.state }, k.state + (k.reusing ? " (on a processor lent by another row)" : "")),
        el("td", {}, `${n.seq} (${n.row})`), el("td", {}, strip))]);
    }
  }
  rows.sort((a, b) => a[0] - b[0]);
  ranks.append(...rows.map(x => x[1]));
  out.push(el("h3", {}, "ranks now"), ranks);

  const use = el("table", { class: "grid", "data-testid": "job-usage" },
    el("tr", {}, ...["NODE", "CPU", "CPU TIME", "MEMORY", "PEAK", "PROCESSES"].map(h => el("th", {}, h))));
  for (const n of live.nodes) {
    if (n.error) {
      use.append(el("tr", { "data-node": n.node }, el("td", {}, n.node), el("td", { colspan: 5, class: "stale" }, n.error)));
      continue;
    }
    if (!n.cgroup) {
      use.append(el("tr", { "data-node": n.node, "data-cgroup": "false" }, el("td", {}, n.node), el("td", { colspan: 5, class: "note" }, "no cgroups on this node")));
      continue;
    }
    const cpu = goDur(n.cpu_time), at = Date.parse(n.at) / 1000;
    const p = L.prev.get(n.node);
    const rate = p && at > p.at ? Math.max(0, (cpu - p.cpu) / (at - p.at)) : null;
    L.prev.set(n.node, { cpu, at });
    use.append(el("tr", { "data-node": n.node, "data-cgroup": "true", "data-cpu-ns": Math.round(cpu * 1e9), "data-memory": n.memory },
      el("td", {}, n.node), el("td", {}, rate == null ? "…" : (rate * 100).toFixed(0) + " %"), el("td", {}, dur(cpu * 1e9)),
      el("td", {}, mib(n.memory)), el("td", {}, mib(n.peak_memory)), el("td", {}, n.processes)));
  }
  out.push(el("h3", {}, "cgroups now (CPU: share of one processor since the reading before)"), use);
  document.getElementById("joblive").replaceChildren(...out);
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("/ui/events");
  es.onopen = () => { conn.textContent = "live"; conn.className = "conn live"; };
  // The browser reconnects by itself (the stream's retry: 1 s): through
  // an agent restart or a controller failover the page keeps its last
  // matrix, marked, until the stream is back.
  es.onerror = () => { conn.textContent = "reconnecting"; conn.className = "conn lost"; };
  es.addEventListener("state", ev => render(JSON.parse(ev.data)));
  es.addEventListener("timeline", ev => onTimeline(JSON.parse(ev.data)));
  es.addEventListener("slice", ev => {
    const s = JSON.parse(ev.data);
    S.seq = s.seq;
    document.querySelector('[data-testid="slice"]').textContent = s.seq;
    if (s.row !== S.row) { S.row = s.row; markCurrent(); }
  });
}

document.getElementById("jobclose").addEventListener("click", () => {
  S.openJob = 0;
  startLive(0);
  document.getElementById("jobpanel").hidden = true;
});
fetch("/ui/me", { credentials: "same-origin" }).then(r => r.json()).then(me => {
  S.me = me;
  document.getElementById("me").textContent = `${me.user}${me.operator ? " (operator)" : ""}`;
}).catch(() => {});
connect();
