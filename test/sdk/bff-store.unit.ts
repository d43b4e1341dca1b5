// The BffStore contract (bff-store-contract.ts) against the in-memory store, on a clock the test moves.
// The same contract runs against PostgreSQL in bff-store-postgres.test.ts.
import t from 'tap';
import { MemoryBffStore } from '../../api/sdk/index.ts';
import { bffStoreContract } from './bff-store-contract.ts';

let now = Date.parse('2026-01-01T00:00:00Z');
const store = new MemoryBffStore(() => now);
bffStoreContract(t, { a: store, b: store, advance: (ms) => { now += ms; } });
