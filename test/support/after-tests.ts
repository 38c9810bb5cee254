import { destroyTestClients } from './stack';

// Every test file: close the SDK clients it made, so idle keep-alive sockets do not hold its worker open.
afterAll(() => destroyTestClients());
