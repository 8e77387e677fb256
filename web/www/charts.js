// Small SVG charts: line charts of per-epoch series and a two-colour histogram.
// No library: the page must work without network, and these need ~60 lines.
const NS = 'http://www.w3.org/2000/svg';
const W = 320, H = 180, L = 34, R = 8, T = 8, B = 22;

function el(name, attrs, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function axes(svg, xmax, ymin, ymax, format) {
  svg.replaceChildren();
  svg.append(el('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }));
  svg.append(el('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
  for (const y of [ymin, (ymin + ymax) / 2, ymax]) {
    const py = sy(y, ymin, ymax);
    svg.append(el('text', { x: L - 3, y: py + 3, 'text-anchor': 'end' }, format(y)));
  }
  svg.append(el('text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, String(xmax)));
  svg.append(el('text', { x: L, y: H - 6 }, '0'));
}

const sx = (x, xmax) => L + (x / Math.max(xmax, 1)) * (W - L - R);
const sy = (y, ymin, ymax) => H - B - ((y - ymin) / ((ymax - ymin) || 1)) * (H - B - T);

/** series: [{ label, color, dash?, points: [[x, y], ...] }] */
export function lineChart(svg, series, { xmax, ymin, ymax, format = (v) => v.toFixed(2) }) {
  if (ymax === undefined) {
    ymax = Math.max(1e-9, ...series.flatMap((s) => s.points.map((p) => p[1])));
  }
  axes(svg, xmax, ymin, ymax, format);
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const d = s.points.map(([x, y], j) => `${j ? 'L' : 'M'}${sx(x, xmax).toFixed(1)},${sy(y, ymin, ymax).toFixed(1)}`).join('');
    svg.append(el('path', { d, fill: 'none', stroke: s.color, 'stroke-width': 2, 'stroke-dasharray': s.dash || '' }));
    svg.append(el('text', { x: L + 6, y: T + 10 + 11 * i, fill: s.color, style: `fill:${s.color}` }, s.label));
  });
}

/** Overlaid histograms of two samples (clean and mislabelled), on shared bins. */
export function histogram(svg, groups, bins = 30) {
  const all = groups.flatMap((g) => g.values);
  const hi = Math.max(1e-6, ...all);
  const counts = groups.map((g) => {
    const c = new Array(bins).fill(0);
    for (const v of g.values) c[Math.min(bins - 1, Math.floor((v / hi) * bins))]++;
    return c;
  });
  const top = Math.max(1, ...counts.flat());
  axes(svg, hi.toFixed(1), 0, top, (v) => String(Math.round(v)));
  const bw = (W - L - R) / bins;
  groups.forEach((g, gi) => {
    counts[gi].forEach((c, b) => {
      if (!c) return;
      const y = sy(c, 0, top);
      svg.append(el('rect', { x: L + b * bw, y, width: bw - 0.5, height: H - B - y, fill: g.color, 'fill-opacity': 0.55 }));
    });
    svg.append(el('text', { x: W - R - 4, y: T + 10 + 11 * gi, 'text-anchor': 'end', style: `fill:${g.color}` }, `${g.label} (${g.values.length})`));
  });
}
