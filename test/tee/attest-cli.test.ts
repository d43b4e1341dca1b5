// `npm run tee-attest` (tee/attest-cli.ts) as a child process: with the dev provider its output is a
// POST /v1/nodes body whose document verifies under the saved DEV-ONLY root (only with allowDevRoot) and
// carries the node's binding as user_data; a second run reuses the same authority; the authority's keys
// stay in 0600 files and never reach the output; bad inputs exit 2 with the usage before anything is
// created; the nsm provider runs the configured command (`--user-data <hex>`, no environment) and passes
// its document through, refusing an answer that is not one base64 document binding this node.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Value } from '@sinclair/typebox/value';
import { verifyNitroAttestation } from '../../tee/attestation/nitro.ts';
import { ATTESTATION_MAX_AGE_S, loadTeeVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { isDevRoot } from '../../tee/attestation/dev-root.ts';
import { DEV_AUTHORITY_FILES } from '../../tee/attestation/dev-authority-dir.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { EnrolNodeBody } from '../../core/api-schemas/nodes.ts';
import { PROGRAM_LAUNCHER, programArgs } from '../support/program.ts';

// Each run is a fresh Node process that loads tsx; on a busy machine that takes seconds.
t.setTimeout(300_000);

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tee-attest-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ORG = 'org_0123456789abcdef01234567';
const USAGE = /usage: npm run tee-attest/;
const PCR0 = 'a0'.repeat(48);
const PCR1 = 'a1'.repeat(48);
const PCR2 = 'a2'.repeat(48);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
function attest(args: string[], stdin?: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROGRAM_LAUNCHER, [...programArgs('tee/attest-cli.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

/** A node identity file exactly as `npm run node-identity` prints it. */
function identity(name: string, kind = 'tee') {
  const sk = bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  const ek = bytesToHex(x25519.getPublicKey(x25519.utils.randomSecretKey()));
  const nodeId = nodeIdFor(Buffer.from(sk, 'hex'));
  const json = JSON.stringify({ node_id: nodeId, signing_key: sk, encryption_key: ek, kind, created: true }) + '\n';
  const file = join(dir, `${name}.identity.json`);
  writeFileSync(file, json);
  return { file, json, nodeId, sk, ek, binding: teeNodeBinding(ORG, nodeId, sk, ek) };
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const documentOf = (out: { attestation: string }) => new Uint8Array(Buffer.from(out.attestation, 'base64'));

const node = identity('enclave');
const authorityDir = join(dir, 'authorities', 'local');
const devArgs = (id = node.file, extra: string[] = []) =>
  ['--identity', id, '--organization', ORG, '--provider', 'dev', '--authority-dir', authorityDir, '--pcr0', PCR0, '--pcr1', PCR1, '--pcr2', PCR2, ...extra];

t.test('dev provider: the enrolment verifies under the saved dev root and binds the node', async (t) => {
  const docFile = join(dir, 'enclave.attestation');
  const r = await attest(devArgs(node.file, ['--document-out', docFile]));
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, string>;
  t.same(Object.keys(out), ['node_id', 'kind', 'signing_key', 'encryption_key', 'attestation']);
  t.match(out, { node_id: node.nodeId, kind: 'tee', signing_key: node.sk, encryption_key: node.ek });
  t.ok(Value.Check(EnrolNodeBody, out), 'a POST /v1/nodes body as the route validates it');
  t.match(r.stderr, /DEV-ONLY authority created/);

  const rootPem = readFileSync(join(authorityDir, DEV_AUTHORITY_FILES.root), 'utf8');
  t.ok(isDevRoot(rootPem), 'root.pem is a DEV-ONLY root');
  const doc = documentOf(out as { attestation: string });
  t.same(new Uint8Array(readFileSync(docFile)), doc, '--document-out holds the same document, as bytes');
  const expectedPcrs = new Map([[0, PCR0], [1, PCR1], [2, PCR2]].map(([i, v]) => [i as number, Buffer.from(v as string, 'hex')]));
  const v = verifyNitroAttestation(doc, { roots: [rootPem], at: new Date(), allowDevRoot: true, maxAgeMs: ATTESTATION_MAX_AGE_S * 1000, expectedPcrs });
  t.same(v.userData, node.binding, 'user_data is teeNodeBinding(org, node id, keys)');
  t.throws(() => verifyNitroAttestation(doc, { roots: [rootPem], at: new Date() }), { code: 'dev_attestation_root' }, 'never without allowDevRoot');

  // What the API and every node run at enrolment, with the root file as NODE_TEE_ROOTS_FILE.
  const verifyTee = loadTeeVerifier(join(authorityDir, DEV_AUTHORITY_FILES.root), true);
  t.same(verifyTee(doc, { at: new Date(), userData: node.binding }), { ...Object.fromEntries([...Array(16).keys()].map((i) => [String(i), '00'.repeat(48)])), 0: PCR0, 1: PCR1, 2: PCR2 });
  t.throws(() => verifyTee(doc, { at: new Date(), userData: teeNodeBinding('org_other', node.nodeId, node.sk, node.ek) }), { code: 'bad_attestation' }, 'bound to this organization only');
});

t.test('the authority keeps its keys in 0600 files and never prints them', async (t) => {
  t.equal(statSync(authorityDir).mode & 0o777, 0o700, 'the directory is 0700');
  for (const name of [DEV_AUTHORITY_FILES.rootKey, DEV_AUTHORITY_FILES.intermediateKey]) {
    const path = join(authorityDir, name);
    t.equal(statSync(path).mode & 0o777, 0o600, `${name} is 0600`);
    t.match(readFileSync(path, 'utf8'), /^-----BEGIN PRIVATE KEY-----/, `${name} holds a PKCS#8 key`);
  }
  const r = await attest(devArgs());
  t.equal(r.code, 0, r.stderr);
  t.notMatch(r.stdout + r.stderr, /PRIVATE KEY/, 'no key in the output');
});

t.test('a second run reuses the same authority: same root, same keys', async (t) => {
  const files = Object.values(DEV_AUTHORITY_FILES).map((name) => join(authorityDir, name));
  const before = files.map(sha256);
  const other = identity('enclave-2');
  const r = await attest(devArgs(other.file));
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /DEV-ONLY authority reused/);
  t.same(files.map(sha256), before, 'no file of the authority changed');
  const doc = documentOf(JSON.parse(r.stdout) as { attestation: string });
  const v = verifyNitroAttestation(doc, { roots: [readFileSync(files[0]!, 'utf8')], at: new Date(), allowDevRoot: true });
  t.same(v.userData, other.binding);
});

t.test('an authority directory that does not hang together is refused, not repaired', async (t) => {
  const partial = join(dir, 'partial');
  mkdirSync(partial);
  writeFileSync(join(partial, DEV_AUTHORITY_FILES.root), readFileSync(join(authorityDir, DEV_AUTHORITY_FILES.root)));
  const r = await attest(['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', partial, '--pcr0', PCR0]);
  t.equal(r.code, 1);
  t.match(r.stderr, /holds part of a dev authority/);
  t.notOk(existsSync(join(partial, DEV_AUTHORITY_FILES.rootKey)), 'nothing was added');

  const loose = join(dir, 'loose');
  t.equal((await attest(['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', loose, '--pcr0', PCR0])).code, 0);
  chmodSync(join(loose, DEV_AUTHORITY_FILES.intermediateKey), 0o644);
  const readable = await attest(['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', loose, '--pcr0', PCR0]);
  t.equal(readable.code, 1);
  t.match(readable.stderr, /intermediate\.key may be read by others/);
});

t.test('bad inputs exit 2 with the usage, before any authority is created', async (t) => {
  const fresh = join(dir, 'never-created');
  const base = ['--organization', ORG, '--provider', 'dev', '--authority-dir', fresh, '--pcr0', PCR0];
  const notJson = join(dir, 'not.json');
  writeFileSync(notJson, 'node_id=n1\n');
  const selfNode = identity('self-node', 'self');
  const mismatched = join(dir, 'mismatched.identity.json');
  writeFileSync(mismatched, JSON.stringify({ node_id: 'n' + '0'.repeat(20), signing_key: node.sk, encryption_key: node.ek, kind: 'tee' }));
  const cases: [string, string[], RegExp][] = [
    ['no arguments', [], /--identity, --organization and --provider are required/],
    ['an unknown option', ['--identity', node.file, ...base, '--pcr9', PCR0], /Unknown option '--pcr9'/],
    ['a positional argument', ['--identity', node.file, ...base, 'extra'], /positional/],
    ['another provider', ['--identity', node.file, '--organization', ORG, '--provider', 'sev'], /--provider must be nsm or dev/],
    ['no --pcr0', ['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', fresh], /needs --authority-dir and --pcr0/],
    ['no --authority-dir', ['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--pcr0', PCR0], /needs --authority-dir and --pcr0/],
    ['a short PCR', ['--identity', node.file, ...base, '--pcr1', 'a1'.repeat(32)], /--pcr1 must be 48 bytes of hex/],
    ['a PCR that is not hex', ['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', fresh, '--pcr0', 'zz'.repeat(48)], /--pcr0 must be 48 bytes/],
    ['a zero PCR0', ['--identity', node.file, '--organization', ORG, '--provider', 'dev', '--authority-dir', fresh, '--pcr0', '00'.repeat(48)], /debug enclave/],
    ['an nsm option with dev', ['--identity', node.file, ...base, '--nsm-command', '/bin/true'], /--nsm-command does not go with --provider dev/],
    ['a dev option with nsm', ['--identity', node.file, '--organization', ORG, '--provider', 'nsm', '--nsm-command', '/bin/true', '--pcr0', PCR0], /--pcr0 does not go with --provider nsm/],
    ['nsm without its command', ['--identity', node.file, '--organization', ORG, '--provider', 'nsm'], /--provider nsm needs --nsm-command/],
    ['a relative nsm command', ['--identity', node.file, '--organization', ORG, '--provider', 'nsm', '--nsm-command', 'nsm-attest'], /--nsm-command must be an absolute path/],
    ['a bad organization', ['--identity', node.file, '--organization', 'org with spaces', '--provider', 'dev', '--authority-dir', fresh, '--pcr0', PCR0], /--organization is not an organization id/],
    ['a missing identity file', ['--identity', join(dir, 'absent.json'), ...base], /--identity: cannot read JSON/],
    ['an identity that is not JSON', ['--identity', notJson, ...base], /--identity: cannot read JSON/],
    ['a node id not derived from the key', ['--identity', mismatched, ...base], /node_id is not the id derived from signing_key/],
    ['a node configured as self', ['--identity', selfNode.file, ...base], /configured as self: set its NODE_KIND to tee/],
  ];
  for (const [what, args, message] of cases) {
    const r = await attest(args);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, message, `${what}: says why`);
    t.match(r.stderr, USAGE, `${what}: prints the usage`);
    t.equal(r.stdout, '', `${what}: prints nothing on stdout`);
  }
  t.notOk(existsSync(fresh), 'no authority was created');

  const help = await attest(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, USAGE, '--help prints the usage on stdout');
});

t.test('nsm provider: runs the command with the binding and passes its document through', async (t) => {
  // Stands in for a real NSM command: records its arguments and environment, prints a document made beforehand.
  const dev = createDevAttestationAuthority();
  const b64 = Buffer.from(dev.attest({ at: new Date(), pcrs: { 0: Buffer.from(PCR0, 'hex') }, userData: node.binding })).toString('base64');
  const answer = join(dir, 'nsm-answer.b64');
  writeFileSync(answer, b64 + '\n');
  const argsFile = join(dir, 'nsm-args');
  const envFile = join(dir, 'nsm-env');
  const command = join(dir, 'fake-nsm');
  writeFileSync(command, `#!/bin/sh\necho "$#:$*" > '${argsFile}'\nenv > '${envFile}'\ncat '${answer}'\n`, { mode: 0o755 });

  const docFile = join(dir, 'nsm.attestation');
  const r = await attest(['--identity', '-', '--organization', ORG, '--provider', 'nsm', '--nsm-command', command, '--document-out', docFile], node.json, { NODE_KMS_SECRET_ACCESS_KEY: 'not-for-the-command' });
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, string>;
  t.same(out, { node_id: node.nodeId, kind: 'tee', signing_key: node.sk, encryption_key: node.ek, attestation: b64 }, 'the document as the command printed it');
  t.equal(readFileSync(argsFile, 'utf8').trim(), `2:--user-data ${bytesToHex(node.binding)}`, 'called as <command> --user-data <hex>');
  t.notMatch(readFileSync(envFile, 'utf8'), /NODE_KMS_|PATH=/, 'with no environment of ours');
  t.same(readFileSync(docFile), Buffer.from(b64, 'base64'));
});

t.test('nsm provider: refuses an answer that is not one base64 document binding this node', async (t) => {
  const script = (name: string, body: string) => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return path;
  };
  const dev = createDevAttestationAuthority();
  const otherBinding = Buffer.from(dev.attest({ at: new Date(), pcrs: { 0: Buffer.from(PCR0, 'hex') }, userData: teeNodeBinding('org_other', node.nodeId, node.sk, node.ek) })).toString('base64');
  const cases: [string, string, RegExp][] = [
    ['not base64', script('nsm-text', 'echo "attestation: ok!"'), /did not print one base64 document/],
    ['nothing', script('nsm-empty', 'true'), /did not print one base64 document/],
    ['two documents', script('nsm-two', 'echo aGVsbG8= aGVsbG8='), /did not print one base64 document/],
    ['base64 of something else', script('nsm-garbage', 'echo aGVsbG8gd29ybGQ='), /not valid CBOR|not a COSE_Sign1/],
    ['a document binding another organization', script('nsm-other', `echo ${otherBinding}`), /user_data is not this node's binding/],
    ['a failing command', script('nsm-fails', 'echo "no /dev/nsm" >&2; exit 3'), /failed \(exit 3\)/],
    ['too much output', script('nsm-flood', "head -c 70000 /dev/zero | tr '\\0' A"), /printed more than 65536 bytes/],
    ['a command that is not there', join(dir, 'no-such-command'), /ENOENT/],
  ];
  for (const [what, command, message] of cases) {
    const r = await attest(['--identity', node.file, '--organization', ORG, '--provider', 'nsm', '--nsm-command', command]);
    t.equal(r.code, 1, `${what}: exit 1`);
    t.match(r.stderr, message, `${what}: says why`);
    t.equal(r.stdout, '', `${what}: prints no enrolment`);
  }
});
