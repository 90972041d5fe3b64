import type { Output } from '../../engine/cli/cli-kit.js';
import { terminalSafe } from '../../engine/text.js';
import { effectiveSettings, settingProblems, settingWarnings, type StartFlags } from '../config.js';
import { NO_SECRET_KEY_WARNING } from '../data/secret-box.js';

// `svc hub config`: every setting the hub would start with, where each came from (a flag, the
// environment, the default, or generated into the database), secrets redacted, every wrong or
// contradictory one a start would refuse, and the allowed but unsafe ones it warns about. It opens
// no database: it runs beside a running hub, and a secret kept in the database is only named as
// such. Exit 1 when a start would refuse.

export function showConfig(flags: StartFlags, dataDefault: string, out: Output): number {
  const settings = effectiveSettings(process.env, flags, dataDefault);
  const problems = settingProblems(process.env, flags);
  const warnings = [...settingWarnings(process.env), ...(process.env.SVC_HUB_SECRET_KEY ? [] : [NO_SECRET_KEY_WARNING])];
  out.result({ settings, problems, warnings, ok: problems.length === 0 }, () => {
    const width = Math.max(...settings.map((s) => s.name.length)) + 2;
    const valueWidth = Math.min(48, Math.max(...settings.map((s) => s.value.length)) + 2);
    const lines = settings.map((s) => `${s.name.padEnd(width)}${s.value.padEnd(valueWidth)}${s.source}`);
    lines.push('');
    if (warnings.length) lines.push(`Warnings (${warnings.length}):`, ...warnings.map((w) => `  ${w}`));
    lines.push(
      problems.length
        ? `A start would refuse (${problems.length}):\n${problems.map((p) => `  ${p}`).join('\n')}`
        : 'No wrong or contradictory setting: a start would accept these.',
    );
    return lines.join('\n');
  });
  return problems.length ? 1 : 0;
}

/**
 * Before a start: every wrong or contradictory setting, one line each, and exit 1 (undefined when
 * there is none); the unsafe but allowed ones as warnings.
 */
export function refuseBadSettings(flags: StartFlags, out: Output): number | undefined {
  const problems = settingProblems(process.env, flags);
  if (!problems.length) {
    for (const w of settingWarnings(process.env)) out.warn(w);
    return undefined;
  }
  process.stderr.write(
    out.json
      ? JSON.stringify({ error: { kind: 'invalid', message: `${problems.length} setting(s) refuse the start`, details: problems } }) + '\n'
      : problems.map((p) => `svc: ${terminalSafe(p)}\n`).join(''),
  );
  return 1;
}
