import { ConfigError } from '../../src/domain/errors';
import { DYNAMODB_START_DEFAULT_SECONDS, readDynamoDbStartSeconds } from '../../src/local/services/dynamodb-local';
import { readLocalSettings } from '../../src/local/lifecycle/local-settings';

// How long a start waits for DynamoDB Local (test/integration/dynamodb-local-start.test.ts
// checks the wait itself).

describe('TALLY_DYNAMODB_START_SECONDS', () => {
  it('defaults to five minutes and takes whole seconds up to an hour', () => {
    expect(DYNAMODB_START_DEFAULT_SECONDS).toBe(300);
    expect(readDynamoDbStartSeconds({})).toBe(300);
    expect(readDynamoDbStartSeconds({ TALLY_DYNAMODB_START_SECONDS: '' })).toBe(300);
    expect(readDynamoDbStartSeconds({ TALLY_DYNAMODB_START_SECONDS: '900' })).toBe(900);
    expect(readDynamoDbStartSeconds({ TALLY_DYNAMODB_START_SECONDS: '3600' })).toBe(3600);
  });

  it.each(['0', '-5', '2.5', '1e3', 'ten', '3601', ' 60'])('refuses %j, naming the variable, before npm start starts anything', (value) => {
    const env = { TALLY_DYNAMODB_START_SECONDS: value };
    expect(() => readDynamoDbStartSeconds(env)).toThrow(ConfigError);
    expect(() => readLocalSettings(env)).toThrow(`TALLY_DYNAMODB_START_SECONDS must be a whole number of seconds from 1 to 3600, got "${value}"`);
  });

  it('reaches npm start through its settings', () => {
    expect(readLocalSettings({ TALLY_DYNAMODB_START_SECONDS: '600' }).dynamodbStartSeconds).toBe(600);
  });
});
