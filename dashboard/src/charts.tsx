/**
 * Charts, drawn with uPlot (small, canvas-based): a daily series per outcome. The colours come
 * from the theme's CSS variables (--chart-*), so the chart is redrawn when the theme changes.
 * A chart is an image to assistive technology, with a summary as its name; the numbers are in a
 * table beside it.
 */
import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** A CSS variable name, e.g. --chart-sent. */
  color: string;
  values: number[];
}

/** The theme in force (data-theme on <html>), updated when it changes. */
function useThemeName(): string {
  const [theme, setTheme] = useState(() => document.documentElement.dataset.theme ?? 'light');
  useEffect(() => {
    const observer = new MutationObserver(() => setTheme(document.documentElement.dataset.theme ?? 'light'));
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => observer.disconnect();
  }, []);
  return theme;
}

const cssVar = (name: string): string => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/** One line per series over UTC days (YYYY-MM-DD). */
export function DailyChart({ days, series, label, height = 260 }: { days: string[]; series: ChartSeries[]; label: string; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const theme = useThemeName();
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const text = cssVar('--muted');
    const grid = cssVar('--chart-grid');
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      width: Math.max(200, element.clientWidth),
      height,
      // The days are UTC days: label them as such whatever the browser's time zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
      axes: [{ ...axis }, { ...axis, size: 48 }],
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      series: [
        { label: 'Day', value: (_u, ts) => (ts == null ? '—' : new Date(ts * 1000).toISOString().slice(0, 10)) },
        ...series.map((item) => ({
          label: item.label,
          stroke: cssVar(item.color),
          width: 2,
          points: { show: days.length <= 31, size: 5 },
        })),
      ],
    };
    const data: uPlot.AlignedData = [days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000), ...series.map((item) => item.values)];
    const chart = new uPlot(options, data, element);
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(200, element.clientWidth), height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [days, series, height, theme]);
  return <div ref={box} className="chart" role="img" aria-label={label} />;
}
