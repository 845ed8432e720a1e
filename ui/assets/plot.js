// A small SVG plotter: lines with points, or grouped bars; hover a point
// for its values, click a legend entry to hide or show its series.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function fmt(v) { return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toPrecision(3) : String(+v.toPrecision(4)); }

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

// drawPlot draws spec into svg: {xLabel, yLabel, series: [{name, points:
// [[x, y], …], dashed}], bars: categories (x values are their indexes),
// step: a step function (CDFs)}.
function drawPlot(svg, spec, hidden) {
  const W = 640, H = 360, L = 64, R = 150, T = 16, B = 46;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.replaceChildren();
  const shown = spec.series.filter(s => !hidden.has(s.name));
  const pts = shown.flatMap(s => s.points).filter(p => isFinite(p[0]) && isFinite(p[1]));
  let [x0, x1] = spec.bars ? [-0.5, spec.bars.length - 0.5] : [Math.min(...pts.map(p => p[0])), Math.max(...pts.map(p => p[0]))];
  let [y0, y1] = [Math.min(0, ...pts.map(p => p[1])), Math.max(...pts.map(p => p[1]))];
  if (!pts.length) { x0 = 0; x1 = 1; y0 = 0; y1 = 1; }
  if (x1 === x0) { x0 -= 0.5; x1 += 0.5; }
  if (y1 === y0) y1 = y0 + 1;
  y1 *= 1.05;
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  const axes = svgEl("g", { class: "axes", stroke: "#999", fill: "none" });
  axes.append(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B }), svgEl("line", { x1: L, y1: T, x2: L, y2: H - B }));
  svg.append(axes);
  const labels = svgEl("g", { "font-size": 11, fill: "#444" });
  for (const y of niceTicks(y0, y1, 5)) {
    labels.append(svgEl("text", { x: L - 6, y: sy(y) + 4, "text-anchor": "end" }, fmt(y)));
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: sy(y), y2: sy(y), stroke: "#eee" }));
  }
  if (spec.bars) spec.bars.forEach((c, i) => labels.append(svgEl("text", { x: sx(i), y: H - B + 16, "text-anchor": "middle" }, c)));
  else for (const x of niceTicks(x0, x1, 6)) labels.append(svgEl("text", { x: sx(x), y: H - B + 16, "text-anchor": "middle" }, fmt(x)));
  labels.append(svgEl("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, spec.xLabel));
  labels.append(svgEl("text", { x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`, "text-anchor": "middle" }, spec.yLabel));
  svg.append(labels);
  const nBars = shown.length, bw = 0.8 / Math.max(nBars, 1);
  spec.series.forEach((s, si) => {
    const c = PALETTE[si % PALETTE.length];
    if (!hidden.has(s.name)) {
      const g = svgEl("g", { "data-series": s.name });
      const ok = s.points.filter(p => isFinite(p[0]) && isFinite(p[1]));
      if (spec.bars) {
        const k = shown.indexOf(s);
        for (const [x, y] of ok) {
          const r = svgEl("rect", { x: sx(x - 0.4 + k * bw), width: sx(bw) - sx(0), y: sy(Math.max(y, 0)), height: Math.abs(sy(y) - sy(0)), fill: c, opacity: s.dashed ? 0.5 : 1 });
          r.append(svgEl("title", {}, `${s.name}, ${spec.bars[x]}: ${fmt(y)}`));
          g.append(r);
        }
      } else {
        let d = "";
        ok.forEach(([x, y], i) => {
          if (spec.step && i > 0) d += `L${sx(x)},${sy(ok[i - 1][1])}`;
          d += `${i ? "L" : "M"}${sx(x)},${sy(y)}`;
        });
        g.append(svgEl("path", { d, fill: "none", stroke: c, "stroke-width": 2, "stroke-dasharray": s.dashed ? "6 4" : "" }));
        if (!spec.step || ok.length < 60) for (const [x, y] of ok) {
          const p = svgEl("circle", { cx: sx(x), cy: sy(y), r: 3.5, fill: c });
          p.append(svgEl("title", {}, `${s.name}: ${spec.xLabel} ${fmt(x)}, ${spec.yLabel} ${fmt(y)}`));
          g.append(p);
        }
      }
      svg.append(g);
    }
    const ly = T + 14 + si * 18;
    const leg = svgEl("g", { class: "legend", "data-legend": s.name, opacity: hidden.has(s.name) ? 0.35 : 1 });
    leg.append(svgEl("rect", { x: W - R + 12, y: ly - 9, width: 14, height: 10, fill: c }), svgEl("text", { x: W - R + 32, y: ly, "font-size": 12 }, s.name));
    leg.addEventListener("click", () => {
      if (hidden.has(s.name)) hidden.delete(s.name); else hidden.add(s.name);
      drawPlot(svg, spec, hidden);
    });
    svg.append(leg);
  });
}

// plotCard is a titled figure with a plot, and optional selects that
// rebuild its spec: make(choice) returns the spec.
function plotCard(parent, title, choices, initial, make) {
  const fig = document.createElement("figure");
  fig.setAttribute("data-testid", "plot");
  const cap = document.createElement("figcaption");
  cap.textContent = title + " ";
  const svg = document.createElementNS(SVGNS, "svg");
  const hidden = new Set();
  if (choices && choices.length > 1) {
    const sel = document.createElement("select");
    for (const c of choices) sel.append(new Option(c, c, false, c === initial));
    sel.addEventListener("change", () => drawPlot(svg, make(sel.value), hidden));
    cap.append(sel);
  }
  fig.append(cap, svg);
  parent.append(fig);
  drawPlot(svg, make(initial), hidden);
}
