/** Where and when a benchmark ran: printed with every result, since numbers mean nothing without it. */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, platform, arch, totalmem } from 'node:os';

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
  readonly date: string;
  readonly commit: string;
  /** Files under src/, bench/ or package.json that differ from the commit (the results file aside). */
  readonly uncommitted: readonly string[];
  readonly loadAtStart: number;
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

export function machineInfo(now = new Date()): MachineInfo {
  const processors = cpus();
  return {
    cpu: processors[0]?.model.trim() ?? 'unknown',
    cores: processors.length,
    memoryGiB: totalmem() / 1024 ** 3,
    node: process.version,
    os: `${platform()} ${arch()}`,
    date: now.toISOString(),
    commit: git(['rev-parse', '--short=12', 'HEAD']).trim() || 'unknown',
    uncommitted: git(['status', '--porcelain', '--', 'src', 'bench', 'package.json'])
      .split('\n')
      .filter((line) => line.trim().length > 0)
      .map((line) => line.slice(3))
      .filter((path) => path !== 'bench/results.md'),
    loadAtStart: loadavg()[0] ?? 0,
  };
}

/** The 1-minute load average now (other processes competing for the cores). */
export function loadNow(): number {
  return loadavg()[0] ?? 0;
}
