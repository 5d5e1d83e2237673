/** A uPlot line chart, loaded on first use (its own chunk, so the initial load stays small). */
import { useEffect, useRef } from 'preact/hooks';

export interface Series {
  label: string;
  values: (number | null)[];
}

/** Plots `series` over `times` (seconds since the epoch). */
export function Chart({ times, series, id }: { times: number[]; series: Series[]; id?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: { destroy(): void } | undefined;
    let live = true;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      if (!live || !box.current) return;
      const colors = ['#2563eb', '#dc2626', '#16a34a', '#d97706'];
      plot = new UPlot(
        {
          width: Math.max(300, box.current.clientWidth),
          height: 220,
          series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length], width: 2 }))],
        },
        [times, ...series.map((s) => s.values)],
        box.current,
      );
    });
    return () => {
      live = false;
      plot?.destroy();
    };
  }, [times, series]);
  return <div class="chart" ref={box} id={id} />;
}
