/**
 * Credentials and region the emulators accept; nothing here reaches AWS.
 * DynamoDB Local rejects access key ids with anything but letters and digits.
 */
export const LOCAL_CREDENTIALS = { accessKeyId: 'tallylocal', secretAccessKey: 'tallylocal' } as const;
export const LOCAL_REGION = 'us-east-1';
