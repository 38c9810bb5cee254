import { userInfo } from 'node:os';
import { actorOf, MAX_ACTOR_LENGTH, systemLoginName } from '../../src/cli/command';

describe('the actor a command records', () => {
  it('takes --actor first, then $USER', () => {
    expect(actorOf('alice', { USER: 'bob' })).toBe('alice');
    expect(actorOf(undefined, { USER: 'bob', LOGNAME: 'carol' })).toBe('bob');
  });

  it("falls back to the operating system's login name when no variable names the user (a container)", () => {
    expect(actorOf(undefined, {})).toBe(userInfo().username);
    expect(actorOf(undefined, { USER: '' }, () => 'svc-tally')).toBe('svc-tally');
  });

  it('records unknown only when the operating system has no entry for the user either', () => {
    expect(actorOf(undefined, {}, () => undefined)).toBe('unknown');
  });

  it('records unknown, without failing the command, when os.userInfo() throws (a uid with no passwd entry)', () => {
    const noPasswdEntry = (): never => {
      throw Object.assign(new Error('uv_os_get_passwd returned ENOENT'), { code: 'ERR_SYSTEM_ERROR' });
    };
    expect(systemLoginName(noPasswdEntry)).toBeUndefined();
    expect(actorOf(undefined, {}, () => systemLoginName(noPasswdEntry))).toBe('unknown');
  });

  it('bounds a long login name to the length an actor may have', () => {
    expect(actorOf(undefined, {}, () => 'x'.repeat(1000))).toHaveLength(MAX_ACTOR_LENGTH);
  });
});
