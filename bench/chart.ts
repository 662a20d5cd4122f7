/** A small SVG line chart (log-log), so the benchmark report needs no charting dependency. */

export interface Series {
  name: string;
  color: string;
  points: Array<[number, number]>;
}

/** Renders series on log10 axes; returns the SVG text. */
export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const W = 640;
  const H = 360;
  const pad = { left: 80, right: 170, top: 40, bottom: 50 };
  const all = series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0);
  const lx = all.map(([x]) => Math.log10(x));
  const ly = all.map(([, y]) => Math.log10(y));
  const [x0, x1] = [Math.floor(Math.min(...lx)), Math.ceil(Math.max(...lx))];
  const [y0, y1] = [Math.floor(Math.min(...ly)), Math.ceil(Math.max(...ly))];
  const sx = (x: number) =>
    pad.left + ((Math.log10(x) - x0) / Math.max(1, x1 - x0)) * (W - pad.left - pad.right);
  const sy = (y: number) =>
    H - pad.bottom - ((Math.log10(y) - y0) / Math.max(1, y1 - y0)) * (H - pad.top - pad.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - pad.right / 2}" y="22" text-anchor="middle" font-size="14">${title}</text>`,
  ];
  for (let e = x0; e <= x1; e++) {
    const x = sx(10 ** e);
    out.push(`<line x1="${x}" y1="${pad.top}" x2="${x}" y2="${H - pad.bottom}" stroke="#ddd"/>`);
    out.push(
      `<text x="${x}" y="${H - pad.bottom + 16}" text-anchor="middle">${(10 ** e).toLocaleString('en')}</text>`,
    );
  }
  for (let e = y0; e <= y1; e++) {
    const y = sy(10 ** e);
    out.push(`<line x1="${pad.left}" y1="${y}" x2="${W - pad.right}" y2="${y}" stroke="#ddd"/>`);
    out.push(
      `<text x="${pad.left - 6}" y="${y + 4}" text-anchor="end">${(10 ** e).toLocaleString('en')}</text>`,
    );
  }
  out.push(`<text x="${(pad.left + W - pad.right) / 2}" y="${H - 12}" text-anchor="middle">${xLabel}</text>`);
  out.push(
    `<text x="16" y="${(pad.top + H - pad.bottom) / 2}" transform="rotate(-90 16 ${(pad.top + H - pad.bottom) / 2})" text-anchor="middle">${yLabel}</text>`,
  );
  series.forEach((s, i) => {
    const pts = s.points
      .filter(([x, y]) => x > 0 && y > 0)
      .map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    for (const p of pts)
      out.push(`<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="3" fill="${s.color}"/>`);
    const ly2 = pad.top + 10 + i * 18;
    out.push(
      `<line x1="${W - pad.right + 12}" y1="${ly2}" x2="${W - pad.right + 32}" y2="${ly2}" stroke="${s.color}" stroke-width="2"/>`,
    );
    out.push(`<text x="${W - pad.right + 38}" y="${ly2 + 4}">${s.name}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
