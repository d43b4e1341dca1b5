// DKLs23 signing over a 3-of-5 key from the project's DKG: all 16 qualified subsets sign, and every
// signature verifies with noble, is low-s, and gives the key's address through viem.
import t from 'tap';
import { committee } from './harness.ts';
import { everySubsetSigns } from './sign-cases.ts';

t.test('3-of-5: every qualified subset signs', (t) => everySubsetSigns(t, committee(5, 3, 'sign-3of5'), '3of5'));
