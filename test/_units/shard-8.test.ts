// Shard 8 of the in-process test files (*.unit.ts), run in one process; test/support/units.ts says why.
import { runUnitShard } from '../support/units.ts';

await runUnitShard(8);
