import { isObject } from '../config-files.js';
import { MCP_SERVER_KEY, desktopConfigDir, desktopConfigPath } from '../wiring.js';
import { entryProblem, isDir, readConfig, type Check } from './check.js';

// Claude Desktop: its one config file, checked only when the app is installed.

export function checkDesktop(home: string): Check {
  const dir = desktopConfigDir(home);
  if (!isDir(dir)) return { check: 'desktop', status: 'ok', message: `Claude Desktop not installed (no ${dir}): nothing to check` };
  const path = desktopConfigPath(home);
  const read = readConfig('desktop', path, 'svc init');
  if ('failed' in read) return read.failed;
  const entry = isObject(read.data.mcpServers) ? read.data.mcpServers[MCP_SERVER_KEY] : undefined;
  if (entry === undefined) {
    return {
      check: 'desktop',
      status: 'warn',
      message: `Claude Desktop is installed but "${MCP_SERVER_KEY}" is not in ${path}`,
      fix: 'svc init',
    };
  }
  const problem = entryProblem(entry, home);
  if (problem) return { check: 'desktop', status: 'fail', message: `${path}: ${problem}`, fix: 'svc init' };
  return { check: 'desktop', status: 'ok', message: `MCP server "${MCP_SERVER_KEY}" registered in ${path}` };
}
