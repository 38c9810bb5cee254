import type { Logger } from '@aws-lambda-powertools/logger';
import type { Log } from '../app/log';

type Fields = Record<string, unknown>;
type Attributes = Parameters<Logger['appendKeys']>[0];

/** Adapts Powertools' Logger (JSON logs with the Lambda context) to the application's Log. */
export function powertoolsLog(logger: Logger): Log {
  const level =
    (name: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, fields?: Fields): void => {
      if (fields === undefined) logger[name](message);
      else logger[name](message, fields as Attributes);
    };
  return { debug: level('debug'), info: level('info'), warn: level('warn'), error: level('error') };
}
