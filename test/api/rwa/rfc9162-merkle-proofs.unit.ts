// RFC 9162 inclusion and consistency proofs (api/rwa/log/merkle.ts) on the transparency-dev/merkle vector
// files (test/vectors/tlog/SOURCES.md): every happy path verifies, every altered proof is refused; and the
// proofs the log generates over the RFC 6962 test leaves are exactly the vectors' happy paths.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hexToBytes } from '@noble/hashes/utils.js';
import { appendToEdge, consistencyProof, inclusionProof, leafHash, rootOf, rootOfEdge, verifyConsistency, verifyInclusion } from '../../../api/rwa/log/merkle.ts';

const DIR = join(import.meta.dirname, '../../vectors/tlog');
const b64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));
const files = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : f.endsWith('.json') ? [join(dir, f)] : []));

// RFC 6962's test leaves (as transparency-dev/merkle's testonly package lists them).
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => leafHash(hexToBytes(h)));

interface Incl { leafIdx: number; treeSize: number; root: string; leafHash: string; proof: string[] | null; wantErr: boolean; desc: string }
interface Cons { size1: number; size2: number; root1: string; root2: string; proof: string[] | null; wantErr: boolean; desc: string }

t.test('inclusion vectors: happy paths verify, every altered proof is refused', async (t) => {
  const all = files(join(DIR, 'inclusion'));
  t.ok(all.length > 50, `${all.length} files`);
  for (const f of all) {
    const v = JSON.parse(readFileSync(f, 'utf8')) as Incl;
    const ok = verifyInclusion(v.leafIdx, v.treeSize, b64(v.leafHash), (v.proof ?? []).map(b64), b64(v.root));
    t.equal(ok, !v.wantErr, `${f.slice(DIR.length)}: ${v.desc}`);
  }
});

t.test('consistency vectors: happy paths verify, every altered proof is refused', async (t) => {
  const all = files(join(DIR, 'consistency'));
  t.ok(all.length > 50, `${all.length} files`);
  for (const f of all) {
    const v = JSON.parse(readFileSync(f, 'utf8')) as Cons;
    const ok = verifyConsistency(v.size1, v.size2, b64(v.root1), b64(v.root2), (v.proof ?? []).map(b64));
    t.equal(ok, !v.wantErr, `${f.slice(DIR.length)}: ${v.desc}`);
  }
});

t.test('the proofs generated over the RFC 6962 leaves are the vectors\' happy paths', async (t) => {
  for (const dir of ['0', '1', '2', '3', '4']) {
    const inc = JSON.parse(readFileSync(join(DIR, 'inclusion', dir, 'happy-path.json'), 'utf8')) as Incl;
    const leaves = LEAVES.slice(0, inc.treeSize);
    t.same(Buffer.from(rootOf(leaves)).toString('base64'), inc.root, `root of ${inc.treeSize}`);
    t.same(inclusionProof(leaves, inc.leafIdx, inc.treeSize).map((h) => Buffer.from(h).toString('base64')), inc.proof ?? [], `inclusion ${inc.leafIdx} in ${inc.treeSize}`);
    const con = JSON.parse(readFileSync(join(DIR, 'consistency', dir, 'happy-path.json'), 'utf8')) as Cons;
    t.same(Buffer.from(rootOf(LEAVES.slice(0, con.size1))).toString('base64'), con.root1);
    t.same(consistencyProof(LEAVES, con.size1, con.size2).map((h) => Buffer.from(h).toString('base64')), con.proof ?? [], `consistency ${con.size1} to ${con.size2}`);
  }
});

t.test('every proof over trees of 1 to 20 leaves verifies, and the right edge gives the same roots', async (t) => {
  const leaves = Array.from({ length: 20 }, (_, i) => leafHash(new TextEncoder().encode(`leaf ${i}`)));
  let edge: Uint8Array[] = [];
  let bad = 0;
  for (let n = 1; n <= leaves.length; n++) {
    edge = appendToEdge(edge, n - 1, leaves[n - 1]!);
    const root = rootOf(leaves.slice(0, n));
    if (Buffer.compare(rootOfEdge(edge), root) !== 0) bad++;
    for (let i = 0; i < n; i++) if (!verifyInclusion(i, n, leaves[i]!, inclusionProof(leaves, i, n), root)) bad++;
    for (let m = 1; m <= n; m++) if (!verifyConsistency(m, n, rootOf(leaves.slice(0, m)), root, consistencyProof(leaves, m, n))) bad++;
    // A proof for another leaf never passes.
    if (n > 1 && verifyInclusion(0, n, leaves[1]!, inclusionProof(leaves, 0, n), root)) bad++;
  }
  t.equal(bad, 0, 'no failure over 20 trees');
});
