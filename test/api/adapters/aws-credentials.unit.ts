// The S3 adapter's credentials from the AWS SDK's standard chain, against local doubles (no AWS): web
// identity (what EKS IRSA sets) through an STS double answering AssumeRoleWithWebIdentity, the container
// credentials endpoint (ECS, EKS Pod Identity), an environment session token; every S3 request checked by
// the S3 double's independent SigV4 verifier, session token included; refresh before expiry.
import t, { type Test } from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { objectStoreFromConfig } from '../../../api/adapters/adapters-from-config.ts';
import { S3ObjectStore } from '../../../api/adapters/s3-object-store.ts';
import { ObjectStoreError } from '../../../api/adapters/object-store.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { cachedCredentials } from '../../../common/aws-credentials.ts';
import { s3Double } from './s3-double.ts';
import { loopbackServer } from './loopback-server.ts';

const REGION = 'eu-west-1';
const BUCKET = 'logos-bucket';
const ROLE = 'arn:aws:iam::123456789012:role/custody-api';
const AWS_VARS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_CREDENTIAL_EXPIRATION', 'AWS_PROFILE', 'AWS_ROLE_ARN', 'AWS_ROLE_SESSION_NAME',
  'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI', 'AWS_CONTAINER_AUTHORIZATION_TOKEN', 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
  'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_STS', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE', 'AWS_EC2_METADATA_DISABLED', 'AWS_REGION', 'AWS_DEFAULT_REGION'];

/** Sets the AWS environment for one test (everything else of AWS_* cleared, no shared files, no IMDS) and restores it after. */
function awsEnv(t: Test, vars: Record<string, string>) {
  const saved = new Map(AWS_VARS.map((k) => [k, process.env[k]]));
  for (const k of AWS_VARS) delete process.env[k];
  const dir = mkdtempSync(join(tmpdir(), 'aws-env-'));
  Object.assign(process.env, { AWS_CONFIG_FILE: join(dir, 'none-config'), AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none-credentials'), AWS_EC2_METADATA_DISABLED: 'true', AWS_REGION: REGION }, vars);
  t.teardown(() => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  return dir;
}

/** Temporary credentials as STS issues them: ASIA key id, secret, session token. */
function issue(keys: Record<string, string>, tokens: Record<string, string>) {
  const accessKeyId = `ASIA${randomBytes(8).toString('hex').toUpperCase()}`;
  keys[accessKeyId] = randomBytes(20).toString('base64');
  tokens[accessKeyId] = randomBytes(48).toString('base64');
  return { accessKeyId, secretAccessKey: keys[accessKeyId]!, sessionToken: tokens[accessKeyId]! };
}

/** An STS double: AssumeRoleWithWebIdentity (unsigned, form-encoded) answered with STS's documented XML. */
async function stsDouble(t: Test, o: { keys: Record<string, string>; tokens: Record<string, string>; tokenFile: () => string; lifetimeMs: number; clock: () => number }) {
  const calls: { roleArn: string | null; sessionName: string | null }[] = [];
  const endpoint = await loopbackServer(t, (req, body, res) => {
    const form = new URLSearchParams(body.toString('utf8'));
    const xmlError = (status: number, code: string, message: string) => res.writeHead(status, { 'content-type': 'text/xml' })
      .end(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>0</RequestId></ErrorResponse>`);
    if (req.method !== 'POST' || form.get('Action') !== 'AssumeRoleWithWebIdentity' || form.get('Version') !== '2011-06-15') return xmlError(400, 'InvalidAction', 'unsupported action');
    if (form.get('WebIdentityToken') !== o.tokenFile()) return xmlError(400, 'InvalidIdentityToken', 'Couldn\'t retrieve verification key from your identity provider');
    if (form.get('RoleArn') !== ROLE) return xmlError(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    calls.push({ roleArn: form.get('RoleArn'), sessionName: form.get('RoleSessionName') });
    const c = issue(o.keys, o.tokens);
    const expiration = new Date(o.clock() + o.lifetimeMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
    res.writeHead(200, { 'content-type': 'text/xml' }).end(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:custody:api</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/custody-api/${form.get('RoleSessionName')}</Arn>
      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:${form.get('RoleSessionName')}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>${c.sessionToken}</SessionToken>
      <SecretAccessKey>${c.secretAccessKey}</SecretAccessKey>
      <Expiration>${expiration}</Expiration>
      <AccessKeyId>${c.accessKeyId}</AccessKeyId>
    </Credentials>
    <Provider>oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`);
  });
  return { endpoint, calls };
}

function s3Config(endpoint: string, extra: Record<string, string> = {}) {
  return loadApiConfig({ API_DATA_DIR: '/tmp/unused', API_OBJECT_STORE: 's3', API_S3_ENDPOINT: endpoint, API_S3_BUCKET: BUCKET, API_S3_REGION: REGION, ...extra });
}

t.test('web identity (IRSA): STS double issues temporary credentials; S3 requests carry the signed session token; refresh before expiry asks STS again', async (t) => {
  const keys: Record<string, string> = {}, tokens: Record<string, string> = {};
  let now = Date.now();
  const clock = () => now;
  const s3 = await s3Double(t, { bucket: BUCKET, region: REGION, keys, sessionTokens: tokens, clock });
  let jwt = 'eyJhbGciOiJSUzI1NiJ9.first-projected-token.sig';
  // Three minutes (on the test's clock); the cache renews one minute before they lapse.
  const sts = await stsDouble(t, { keys, tokens, tokenFile: () => jwt, lifetimeMs: 180_000, clock });
  const dir = mkdtempSync(join(tmpdir(), 'irsa-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, jwt);
  awsEnv(t, { AWS_ROLE_ARN: ROLE, AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_SESSION_NAME: 'custody-api', AWS_ENDPOINT_URL_STS: sts.endpoint });

  const store = objectStoreFromConfig(s3Config(s3.endpoint), clock) as S3ObjectStore;
  t.ok(store instanceof S3ObjectStore, 'no static keys: the S3 store with the credential chain');
  const key = 'logos/' + 'ab'.repeat(16);
  await store.put(key, '{"a":1}', 'application/json');
  t.equal((await store.read(key))?.toString(), '{"a":1}', 'put then get through the adapter');
  t.same(await store.head(key), { size: 7 }, 'head');
  t.equal(sts.calls.length, 1, 'one AssumeRoleWithWebIdentity for three requests: credentials cached');
  t.same(sts.calls[0], { roleArn: ROLE, sessionName: 'custody-api' }, 'the role and session name from the environment');
  t.same(s3.log.map((l) => [l.method, l.form, l.status]), [['PUT', 'header', 200], ['GET', 'header', 200], ['HEAD', 'header', 200]], 'the double verified each signature');
  const first = Object.keys(keys)[0]!;

  // A request with the temporary key but without its token is refused, and stores nothing.
  const noToken = new S3ObjectStore({ endpoint: s3.endpoint, bucket: BUCKET, region: REGION, credentials: { accessKeyId: first, secretAccessKey: keys[first]! }, clock });
  await t.rejects(noToken.put('logos/' + 'cd'.repeat(16), 'x', 'text/plain'), ObjectStoreError, 'no session token: refused');
  const refusal = s3.lastFailure();
  t.equal(refusal && !refusal.ok ? refusal.code : undefined, 'InvalidToken', 'the double names the missing token');
  const wrongToken = new S3ObjectStore({ endpoint: s3.endpoint, bucket: BUCKET, region: REGION, credentials: { accessKeyId: first, secretAccessKey: keys[first]!, sessionToken: 'forged' }, clock });
  await t.rejects(wrongToken.put('logos/' + 'cd'.repeat(16), 'x', 'text/plain'), ObjectStoreError, 'another session token: refused');
  t.equal(s3.objects.has('logos/' + 'cd'.repeat(16)), false, 'nothing stored by the refused requests');
  t.equal(sts.calls.length, 1, 'refusals did not touch STS');

  // The kubelet rotates the projected token; two and a half minutes on, the cache renews from STS with it.
  jwt = 'eyJhbGciOiJSUzI1NiJ9.rotated-projected-token.sig';
  writeFileSync(tokenFile, jwt);
  now += 150_000;
  await store.put(key, '{"a":2}', 'application/json');
  t.equal(sts.calls.length, 2, 'near expiry: STS asked again');
  const second = Object.keys(keys)[1];
  t.ok(second && second !== first, 'new temporary credentials issued');
  t.equal((await store.read(key))?.toString(), '{"a":2}', 'requests signed with the renewed credentials verify');
  t.equal(sts.calls.length, 2, 'renewed credentials cached again');

  // (c) A presigned URL made with temporary credentials carries the token as a signed query parameter.
  const url = new URL(await store.downloadUrl(key, now + 600_000));
  t.equal(url.searchParams.get('X-Amz-Security-Token'), tokens[second!], 'X-Amz-Security-Token in the presigned URL');
  const got = await fetch(url);
  t.equal(got.status, 200, 'the double verifies the presigned GET');
  t.equal(await got.text(), '{"a":2}');
  const tampered = new URL(url);
  tampered.searchParams.set('X-Amz-Security-Token', tokens[first]!);
  t.equal((await fetch(tampered)).status, 403, 'the token is part of what is signed: swapping it breaks the URL');
  const stripped = new URL(url);
  stripped.searchParams.delete('X-Amz-Security-Token');
  t.equal((await fetch(stripped)).status, 403, 'without the token the URL is refused');
});

t.test('container credentials (ECS, EKS Pod Identity): the endpoint with its authorization token file', async (t) => {
  const keys: Record<string, string> = {}, tokens: Record<string, string> = {};
  let now = Date.now();
  const clock = () => now;
  const s3 = await s3Double(t, { bucket: BUCKET, region: REGION, keys, sessionTokens: tokens, clock });
  const authToken = randomBytes(24).toString('hex');
  const seen: (string | undefined)[] = [];
  const agent = await loopbackServer(t, (req, _body, res) => {
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== authToken) return res.writeHead(401, { 'content-type': 'application/json' }).end('{"Message":"unauthorized"}');
    const c = issue(keys, tokens);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken, AccountId: '123456789012',
      Expiration: new Date(now + 180_000).toISOString(),
    }));
  });
  const dir = mkdtempSync(join(tmpdir(), 'pod-identity-'));
  writeFileSync(join(dir, 'eks-pod-identity-token'), authToken);
  awsEnv(t, { AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agent}/v1/credentials`, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: join(dir, 'eks-pod-identity-token') });

  const store = objectStoreFromConfig(s3Config(s3.endpoint), clock) as S3ObjectStore;
  const key = 'logos/' + 'ef'.repeat(16);
  await store.put(key, 'hello', 'text/plain');
  t.equal((await store.read(key))?.toString(), 'hello', 'put then get with container credentials');
  t.same(seen, [authToken], 'one call to the credentials endpoint, with the token file\'s contents');
  now += 150_000;
  await store.head(key);
  t.equal(seen.length, 2, 'renewed before expiry');
  t.equal(Object.keys(keys).length, 2, 'two sets issued; both verified at the S3 double');
});

t.test('environment session token; static keys in the configuration take precedence over the chain', async (t) => {
  const keys: Record<string, string> = {}, tokens: Record<string, string> = {};
  const now = Date.now();
  const s3 = await s3Double(t, { bucket: BUCKET, region: REGION, keys, sessionTokens: tokens, clock: () => now });
  const env = issue(keys, tokens);
  awsEnv(t, { AWS_ACCESS_KEY_ID: env.accessKeyId, AWS_SECRET_ACCESS_KEY: env.secretAccessKey, AWS_SESSION_TOKEN: env.sessionToken });
  const chain = objectStoreFromConfig(s3Config(s3.endpoint), () => now) as S3ObjectStore;
  await chain.put('logos/' + '01'.repeat(16), 'from env', 'text/plain');
  t.equal((await chain.read('logos/' + '01'.repeat(16)))?.toString(), 'from env', 'AWS_* session credentials from the environment verify');

  keys.STATICKEYEXAMPLE = 'static-secret-value';
  const configured = objectStoreFromConfig(s3Config(s3.endpoint, { API_S3_ACCESS_KEY_ID: 'STATICKEYEXAMPLE', API_S3_SECRET_ACCESS_KEY: 'static-secret-value' }), () => now) as S3ObjectStore;
  await configured.put('logos/' + '02'.repeat(16), 'static', 'text/plain');
  t.equal((await configured.read('logos/' + '02'.repeat(16)))?.toString(), 'static', 'configured static keys sign without a token although the environment has one');
  delete keys.STATICKEYEXAMPLE;
  await t.rejects(configured.read('logos/' + '02'.repeat(16)), ObjectStoreError, 'and it is those keys that are used: withdrawn at the double, refused');

  t.throws(() => s3Config(s3.endpoint, { API_S3_ACCESS_KEY_ID: 'STATICKEYEXAMPLE' }), /API_S3_ACCESS_KEY_ID is set without API_S3_SECRET_ACCESS_KEY/, 'half a static key pair is a configuration error');
});

t.test('the credentials cache: kept until shortly before expiry, one fetch for concurrent callers, failures not kept', async (t) => {
  let now = 1_000_000;
  let calls = 0;
  let fail = false;
  const cache = cachedCredentials(async () => {
    calls++;
    if (fail) throw new Error('provider down');
    return { accessKeyId: `K${calls}`, secretAccessKey: 's', sessionToken: 't', expiration: new Date(now + 300_000) };
  }, { clock: () => now, refreshBeforeMs: 60_000 });
  const [a, b] = await Promise.all([cache(), cache()]);
  t.equal(a.accessKeyId, 'K1');
  t.equal(b.accessKeyId, 'K1', 'concurrent callers share one fetch');
  now += 239_000;
  t.equal((await cache()).accessKeyId, 'K1', 'kept while more than the margin remains');
  now += 2_000;
  fail = true;
  await t.rejects(cache(), /provider down/, 'within the margin: fetched again; the failure surfaces');
  fail = false;
  t.equal((await cache()).accessKeyId, 'K3', 'the failure was not cached');
  t.equal(calls, 3);
});
