import { countLog, LogCounter, type CountOptions, type LogCount } from './log-counter';
import { RecordLines, type LogContent } from './log-records';

/**
 * Counts a log's content, whatever its format: text through {@link countLog}, records
 * (Parquet) as lines of the one {@link LogCounter} through {@link RecordLines}.
 */
export async function countLogContent(content: LogContent, options: CountOptions, objectName: string): Promise<LogCount> {
  if (content.kind === 'text') return countLog(content.text, options, objectName);
  const counter = new LogCounter(options);
  const lines = new RecordLines(counter);
  await content.read(lines);
  lines.flush();
  return counter.finish(objectName);
}
