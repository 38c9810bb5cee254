/** A C0 or C1 control character, DEL, or a surrogate half without its other half. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A value a user gave, as a message may quote it back: control characters (a newline or
 * an escape sequence would forge lines or repaint the terminal) and broken surrogates as
 * `?`, and at most `max` characters (a 100,000-character id is not echoed whole).
 *
 * @example printable('INC-1\n[ok] approved') // 'INC-1?[ok] approved'
 */
export function printable(value: string, max = 40): string {
  const characters = [...value.replace(UNPRINTABLE, '?')];
  return characters.length > max ? `${characters.slice(0, max).join('')}...` : characters.join('');
}
