import { useEffect, useState } from 'react';
import { useStdout } from 'ink';

interface TerminalSize {
  columns: number;
  rows: number;
}

/** The terminal's size, following resizes; fixed when both are given. */
export function useTerminalSize(columns?: number, rows?: number): TerminalSize {
  const { stdout } = useStdout();
  const measure = () => ({ columns: columns ?? (stdout.columns || 80), rows: rows ?? (stdout.rows || 24) });
  const [size, setSize] = useState(measure);
  useEffect(() => {
    if (columns && rows) return;
    const onResize = () => setSize(measure());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, columns, rows]);
  return size;
}
