import { openLogFile } from '../src/adapters/logs/log-opening';
import { countLogContent } from '../src/domain/logs/log-formats';
(async () => {
  for (let i = 0; i < 2; i++) {
    const t = process.cpuUsage(); const w = Date.now();
    const r = await countLogContent(await openLogFile(process.argv[2]!), { resolver: { kind: 'host-label' }, metricRules: [], objectKey: 'x' }, 'x');
    const u = process.cpuUsage(t);
    console.log(((u.user + u.system) / 1e6).toFixed(3), (Date.now() - w) / 1000, r.lines.read, Math.round(process.memoryUsage().rss / 1e6));
  }
})();
