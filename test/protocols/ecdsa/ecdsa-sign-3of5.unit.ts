// DKLs23 signing over a 3-of-5 key from the project's DKG: all 16 qualified subsets sign, and every
// signature verifies with noble, is low-s, and gives the key's address through viem. On the node's native
// primitives, as the nodes run it: the noble reference makes the same transcripts byte for byte
// (test/protocols/primitives.unit.ts) and both providers sign every subset of 2-of-2 and 2-of-3
// (ecdsa-sign.unit.ts), so sixteen more signings on it would prove nothing new, at three times the CPU.
import t from 'tap';
import { nativePrimitives } from '../../../node/runtime/native-primitives.ts';
import { committee } from './harness.ts';
import { everySubsetSigns } from './sign-cases.ts';

t.test('3-of-5: every qualified subset signs', (t) => everySubsetSigns(t, committee(5, 3, 'sign-3of5'), '3of5', nativePrimitives));
