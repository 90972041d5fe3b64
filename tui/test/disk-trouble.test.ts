import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../../engine/test/support/run-svc.js';

// A store on a disk that fills up, and on a read-only mount, for real: each scenario runs in a
// private mount namespace (unshare) holding a small tmpfs, so no root is needed and nothing
// outside the test is touched. Where the kernel refuses user namespaces the scenarios are
// skipped with a message (they need nothing else).

function namespacesWork(): boolean {
  const r = spawnSync('unshare', ['-Urm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt && echo ok'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() === 'ok';
}

const can = namespacesWork();
if (!can) console.warn('disk-trouble tests: user and mount namespaces (unshare -Urm) are not available here; skipped');

/** Runs a shell script in its own mount namespace; `svc` in it is the compiled CLI. Returns each `@@ name` section's output. */
function scenario(script: string): Record<string, { out: string; code: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-disk-'));
  const file = join(dir, 'run.sh');
  writeFileSync(
    file,
    `set -u\nsvc() { node ${CLI} "$@"; }\nstep() { name=$1; shift; out=$("$@" 2>&1); code=$?; printf '@@ %s %s\\n%s\\n' "$name" "$code" "$out"; }\n${script}\n`,
  );
  const r = spawnSync('unshare', ['-Urm', 'sh', file], {
    encoding: 'utf8',
    env: { ...process.env, SVC_EMBED: 'off', NO_COLOR: '1' },
    timeout: 120_000,
  });
  const sections: Record<string, { out: string; code: number }> = {};
  for (const part of r.stdout.split(/^@@ /m).slice(1)) {
    const [head, ...rest] = part.split('\n');
    const [name, code] = head!.split(' ');
    sections[name!] = { out: rest.join('\n').trim(), code: Number(code) };
  }
  if (Object.keys(sections).length === 0) throw new Error(`the scenario printed nothing: ${r.stderr}`);
  return sections;
}

describe.runIf(can)('a store on a disk in trouble', () => {
  it('on a full disk: reads work, a failed learn leaves nothing behind, and the message says the disk is full', () => {
    const s = scenario(`
      mnt=$(mktemp -d); mount -t tmpfs -o size=3m tmpfs "$mnt"; export SVC_PATH="$mnt/store"
      svc learn "Rotate the deploy keys every quarter" --json >/dev/null
      svc learn "Tag releases from main only" --json >/dev/null
      ls "$SVC_PATH/engrams" | wc -l > "$mnt/../before" 2>/dev/null || true
      before=$(ls "$SVC_PATH/engrams" | wc -l)
      dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
      step status svc status --json
      step recall svc recall "deploy keys" --fast --json
      step list svc list --json
      step learn svc learn "A third rule that cannot fit" --json
      step count sh -c "ls \\"$SVC_PATH/engrams\\" | wc -l"
      echo "@@ before 0"; echo "$before"
      rm "$mnt/filler"; dd if=/dev/zero of="$mnt/filler" bs=1k count=$(( $(df -k --output=avail "$mnt" | tail -1) - 3 )) 2>/dev/null
      step nearly svc learn "Another rule on a nearly full disk" --json
      rm "$mnt/filler"
      step after svc list --json
      step learned svc learn "Space again" --json
    `);
    expect(s.status!.code, s.status!.out).toBe(0);
    expect(JSON.parse(s.status!.out.split('\n').find((l) => l.startsWith('{'))!)).toMatchObject({ engrams: 2 });
    expect(s.recall!.code, s.recall!.out).toBe(0);
    expect(s.recall!.out).toMatch(/Rotate the deploy keys/);
    expect(s.list!.code, s.list!.out).toBe(0);
    expect(s.learn!.code).toBe(1);
    expect(s.learn!.out).toMatch(/the disk holding the store at .* is full: nothing was written; free some space and try again/);
    expect(s.count!.out).toBe(s.before!.out);
    expect(s.nearly!.code).toBe(1);
    expect(s.nearly!.out).toMatch(/disk .* is full/);
    expect(JSON.parse(s.after!.out.split('\n').find((l) => l.startsWith('{'))!).count).toBe(2);
    expect(s.learned!.code, s.learned!.out).toBe(0);
  });

  it('on a read-only mount: recall, inject, list and status work and say so; writes are refused in one line', () => {
    const s = scenario(`
      mnt=$(mktemp -d); mount -t tmpfs -o size=8m tmpfs "$mnt"; export SVC_PATH="$mnt/store"
      svc learn "Never force-push to main" --json >/dev/null
      svc learn "Prefer small pull requests" --json >/dev/null
      mount -o remount,ro "$mnt"
      step status svc status --json
      step recall svc recall "force push main" --fast --json
      step inject svc inject "push the fix to main" --fast --json
      step list svc list --json
      step learn svc learn "Cannot be written" --json
      other=$(mktemp -d); step add sh -c "SVC_PATH=$other node ${CLI} stores add $mnt/store group:ro --readonly --json"
      step span sh -c "SVC_PATH=$other node ${CLI} recall 'small pull requests' --fast --json"
    `);
    for (const name of ['status', 'recall', 'inject', 'list']) {
      expect(s[name]!.code, `${name}: ${s[name]!.out}`).toBe(0);
      expect(s[name]!.out, name).toMatch(
        /is read-only here \(a read-only file system\): reading it with an index in memory; writes are refused/,
      );
    }
    expect(s.recall!.out).toMatch(/Never force-push to main/);
    expect(s.inject!.out).toMatch(/force-push/);
    expect(s.learn!.code).toBe(1);
    expect(s.learn!.out).toMatch(/is read-only here \(a read-only file system\): reads work, writes do not/);
    expect(s.learn!.out).not.toMatch(/^\s+at /m);
    expect(s.add!.code, s.add!.out).toBe(0);
    expect(s.span!.code, s.span!.out).toBe(0);
    expect(s.span!.out).toMatch(/Prefer small pull requests/);
  });
});
