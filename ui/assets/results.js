// The results page: every CSV file of the folder drawn as plots, with the
// columns to show chosen in each plot's menu.
"use strict";

function parseCSV(text) {
  const rows = [];
  let row = [], cell = "", q = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (q) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; }
      else if (ch === '"') q = false;
      else cell += ch;
    } else if (ch === '"') q = true;
    else if (ch === ",") { row.push(cell); cell = ""; }
    else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      row.push(cell); rows.push(row); row = []; cell = "";
    } else cell += ch;
  }
  if (cell !== "" || row.length) { row.push(cell); rows.push(row); }
  const [header, ...data] = rows;
  return data.filter(r => r.length === header.length).map(r => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

const num = v => (v === "" || v == null ? NaN : Number(v));
const numericColumns = (rows, header) => header.filter(h => rows.some(r => isFinite(num(r[h]))));
const distinct = (rows, col) => [...new Set(rows.map(r => r[col]))];

function section(title) {
  const s = document.createElement("section");
  const h = document.createElement("h2");
  h.textContent = title;
  s.append(h);
  document.getElementById("plots").append(s);
  return s;
}

// A sweep (sim sweep's results.csv): each metric against the load, a line
// per mode (and per MPL, slice or policy where those vary).
function sweepPlots(file, rows) {
  const s = section(`${file.path}: sim sweep`);
  // Space sharing has no MPL or slice: they tell apart only the others.
  const timeShared = rows.filter(r => r.mode !== "space");
  const varies = k => file.header.includes(k) && distinct(["mpl", "slice"].includes(k) ? timeShared : rows, k).length > 1;
  const keys = ["mode", "mpl", "slice", "policy", "workload"].filter(varies);
  const label = r => keys.filter(k => !(r.mode === "space" && ["mpl", "slice"].includes(k)))
    .map(k => (k === "mode" ? r[k] : `${k} ${r[k]}`)).join(", ") || "all";
  const metrics = numericColumns(rows, file.header).filter(h => !["index", "load", "seed", "jobs", "mpl", "simulated"].includes(h));
  for (const m of ["mean_response", "mean_wait", "mean_slowdown", "processor_util"].filter(m => metrics.includes(m))) {
    plotCard(s, "against the load", metrics, m, y => {
      const by = new Map();
      for (const r of rows) {
        const k = label(r);
        if (!by.has(k)) by.set(k, []);
        by.get(k).push([num(r.load), num(r[y])]);
      }
      return { xLabel: "load", yLabel: y, series: [...by].map(([name, points]) => ({ name, points: points.sort((a, b) => a[0] - b[0]) })) };
    });
  }
}

// A bench run (results.csv of bench run, make demo): per mode, a metric
// measured beside its simulation.
function benchPlots(file, rows) {
  const s = section(`${file.path}: measured beside simulated`);
  const pairs = file.header.filter(h => h.startsWith("sim_") && file.header.includes(h.slice(4)));
  const modes = rows.map(r => r.mode);
  plotCard(s, "per mode", pairs.map(p => p.slice(4)), pairs.length ? pairs[0].slice(4) : "", m => ({
    xLabel: "mode", yLabel: m, bars: modes,
    series: [{ name: "measured", points: rows.map((r, i) => [i, num(r[m])]) },
      { name: "simulated", dashed: true, points: rows.map((r, i) => [i, num(r["sim_" + m])]) }],
  }));
}

// The jobs of a bench run (MODE/jobs.csv): a CDF per mode of a per-job
// column.
function cdfPlot(files) {
  const s = section("per-job records: cumulative distributions");
  const cols = numericColumns(files.flatMap(f => f.rows), files[0].header).filter(h => !["seq", "id", "processors", "iterations"].includes(h));
  plotCard(s, "CDF", cols, cols.includes("response_s") ? "response_s" : cols[0], col => ({
    xLabel: col, yLabel: "fraction of jobs", step: true,
    series: files.map(f => {
      const v = f.rows.filter(r => !r.state || r.state === "COMPLETED").map(r => num(r[col])).filter(isFinite).sort((a, b) => a - b);
      return { name: f.path.split("/")[0], points: v.map((x, i) => [x, (i + 1) / v.length]) };
    }),
  }));
}

function genericPlot(file, rows) {
  const s = section(file.path);
  const cols = numericColumns(rows, file.header);
  if (cols.length < 2) return;
  plotCard(s, `${cols[0]} against`, cols.slice(1), cols[1], y => ({
    xLabel: cols[0], yLabel: y, series: [{ name: y, points: rows.map(r => [num(r[cols[0]]), num(r[y])]).sort((a, b) => a[0] - b[0]) }],
  }));
}

async function main() {
  const status = document.getElementById("status");
  const list = await (await fetch("/api/files")).json();
  document.getElementById("dir").textContent = list.dir;
  const jobs = [];
  for (const f of list.files) {
    const rows = parseCSV(await (await fetch("/data/" + f.path.split("/").map(encodeURIComponent).join("/"))).text());
    if (f.header.includes("load") && f.header.includes("mode") && f.header.includes("mean_response")) sweepPlots(f, rows);
    else if (f.header.some(h => h.startsWith("sim_")) && f.header.includes("mode")) benchPlots(f, rows);
    else if (f.header.includes("response_s") && f.path.includes("/")) jobs.push({ ...f, rows });
    else genericPlot(f, rows);
  }
  if (jobs.length) cdfPlot(jobs);
  status.remove();
}

main().catch(e => { document.getElementById("status").textContent = "cannot read the results: " + e; });
