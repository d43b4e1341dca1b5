// Integration gateways (docs/platform/gateways.md) against the reference gateway of this folder, on real
// HTTPS with a self-signed certificate on loopback: the 8 operations with their refusals (each reading
// state back), the conformance suite passing, and failing for the right reason against a gateway that
// breaks each rule it checks, TLS pinning failing closed, and a funding request settling end to end
// through the gateway, with the status rules for in-flight transfers.
import t, { type Test } from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { fundingApp, type FundingApp } from '../funding/funding-app.ts';
import { MISBEHAVIOURS, ReferenceGateway, selfSignedCertificate, type Misbehaviour } from './reference-gateway.ts';
import { SUITE_CHECKS } from '../../../api/gateways/conformance-suite.ts';
import { FUNDING_REQUESTS } from '../../../api/funding/collections.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';

// The whole file's time is bounded by a test of its own, not at the top level: the file shares its
// process with others (test/support/units.ts).
t.test('integration gateways against the reference gateway', async (t) => {
  // Six apps, fifteen conformance checks against ten gateways and a funding flow: minutes on a loaded machine.
  t.setTimeout(400_000);
  // The gateway timeout is what the held submission waits out; it must also exceed any ordinary call's
  // time on a loaded machine (nine gateways are checked at once below): 2 s did not, under load.
  const OPTS = { gateways: { timeoutMs: 5000, callbackWaitMs: 8000 } };

  async function withGateway(t: Test, s: FundingApp, misbehave?: Misbehaviour, token = s.acme.owner) {
    const gw = await new ReferenceGateway({ now: () => s.clock.now(), ...(misbehave ? { misbehave } : {}) }).start();
    t.teardown(() => gw.stop());
    const made = await s.bearer('POST', '/v1/integration-gateways', { name: `Core ${misbehave ?? 'bank'}`, base_url: gw.url, callback_public_key: gw.callbackPublicKey }, token, { 'idempotency-key': `gw-${misbehave ?? 'ref'}` });
    if (made.statusCode !== 201) throw new Error(made.body);
    const view = made.json();
    Object.assign(gw, { gatewayId: view.id, serviceKeyId: view.service_key.keyid, servicePublicKey: view.service_key.public_key });
    return { gw, id: view.id as string, view };
  }

  const pin = (s: FundingApp, id: string, body: unknown, token = s.acme.owner) => s.bearer('POST', `/v1/integration-gateways/${id}/pin-cert`, body, token);
  const conformance = (s: FundingApp, id: string, token = s.acme.owner) => s.bearer('POST', `/v1/integration-gateways/${id}/conformance`, undefined, token);
  const events = async (s: FundingApp, id: string) => (await s.bearer('GET', `/v1/integration-gateways/${id}/events?limit=100`)).json().data as { type: string; data: Record<string, unknown> }[];

  t.test('the 8 operations: create, read, list, patch, status; refusals change nothing; permissions; another tenant sees 404', async (t) => {
    const s = await fundingApp(t, OPTS);
    const gw = await new ReferenceGateway().start();
    t.teardown(() => gw.stop());
    const body = { name: 'Core bank', base_url: gw.url, callback_public_key: gw.callbackPublicKey };
    const post = (b: unknown, key = 'k1', token = s.acme.owner) => s.bearer('POST', '/v1/integration-gateways', b, token, { 'idempotency-key': key });
    const made = await post(body);
    t.equal(made.statusCode, 201, made.body);
    const g = made.json();
    t.match(g, { name: 'Core bank', base_url: gw.url, environment: 'sandbox', status: 'suspended', pins: null, conformance: null, currencies: ['USD'], serving: false, suite_version: 1, service_key: { algorithm: 'ed25519' } });
    t.match(g.id, /^gwy_[0-9a-f]{26}$/);
    t.match(g.callback_url, new RegExp(`/v1/gateway-callbacks/${g.id}$`));
    t.notOk('tenant' in g || 'workspace' in g, 'no internal fields');
    t.equal((await post(body)).json().id, g.id, 'the same Idempotency-Key and body answer the same gateway');
    t.same([(await post({ ...body, name: 'Other' })).json().code], ['idempotency_key_reused']);

    const bad: [string, unknown, number, string][] = [
      ['plain http', { ...body, base_url: gw.url.replace('https', 'http') }, 422, 'validation_failed'],
      ['a query', { ...body, base_url: `${gw.url}/?x=1` }, 422, 'validation_failed'],
      ['a private address not allowed', { ...body, base_url: 'https://10.1.2.3' }, 422, 'validation_failed'],
      ['credentials in the URL', { ...body, base_url: gw.url.replace('https://', 'https://u:p@') }, 422, 'validation_failed'],
      ['a key that is not hex', { ...body, callback_public_key: 'z'.repeat(64) }, 422, 'validation_failed'],
      ['a short key', { ...body, callback_public_key: 'ab' }, 400, 'invalid_request'],
      ['a name with a newline', { ...body, name: 'a\nb' }, 422, 'validation_failed'],
      ['an unknown field', { ...body, secret: 'x' }, 400, 'invalid_request'],
      ['a lower-case currency', { ...body, currencies: ['usd'] }, 400, 'invalid_request'],
      ['a repeated currency', { ...body, currencies: ['USD', 'USD'] }, 422, 'validation_failed'],
    ];
    for (const [why, b, status, code] of bad) {
      const r = await post(b, `bad-${why.replace(/\W/g, '-')}`);
      t.same([r.statusCode, r.json().code], [status, code], `${why}: ${r.body}`);
    }
    const list = await s.bearer('GET', '/v1/integration-gateways');
    t.same(list.json().data.map((x: { id: string }) => x.id), [g.id], 'refused creations stored nothing');

    // PATCH: name and base_url; bad input changes nothing.
    const patched = await s.bearer('PATCH', `/v1/integration-gateways/${g.id}`, { name: 'Core bank 2' });
    t.same([patched.statusCode, patched.json().name], [200, 'Core bank 2']);
    t.equal((await s.bearer('PATCH', `/v1/integration-gateways/${g.id}`, { base_url: 'ftp://x' })).json().code, 'validation_failed');
    t.equal((await s.bearer('PATCH', `/v1/integration-gateways/${g.id}`, { status: 'active' })).json().code, 'invalid_request', 'status is not patched');
    t.equal((await s.bearer('GET', `/v1/integration-gateways/${g.id}`)).json().base_url, gw.url, 'read back: unchanged');
    t.equal((await s.bearer('PATCH', `/v1/integration-gateways/${g.id}`, {})).json().updated_at, patched.json().updated_at, 'an empty patch changes nothing');

    // Status: unknown value 400; active in sandbox needs no conformance; one active per workspace.
    const status = (id: string, v: unknown, token = s.acme.owner) => s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: v }, token);
    t.equal((await status(g.id, 'paused')).json().code, 'invalid_request');
    const gatewayItem = async () => ((await s.bearer('GET', '/v1/onboarding/status')).json() as { environments: { environment: string; items: { item: string; configured: boolean }[] }[] })
      .environments.find((e) => e.environment === 'sandbox')!.items.find((i) => i.item === 'gateway')!.configured;
    t.equal(await gatewayItem(), false, 'onboarding: no gateway serves the workspace yet');
    const active = await status(g.id, 'active');
    t.same([active.statusCode, active.json().status, active.json().serving], [200, 'active', true]);
    t.equal(await gatewayItem(), true, 'onboarding: the active gateway serves the workspace');
    const other = (await post({ ...body, name: 'Second' }, 'k2')).json();
    const clash = await status(other.id, 'active');
    t.same([clash.statusCode, clash.json().code], [409, 'conflict'], 'one active gateway per workspace');
    t.equal((await s.bearer('GET', `/v1/integration-gateways/${other.id}`)).json().status, 'suspended', 'read back: still suspended');
    const moved = await s.bearer('PATCH', `/v1/integration-gateways/${g.id}`, { base_url: `${gw.url}/gw` });
    t.same([moved.statusCode, moved.json().code], [409, 'conflict'], 'base_url does not change under an active gateway');

    // The status webhook (the catalog's integration_gateway.status_changed) was emitted once.
    const emitted = [];
    for await (const e of s.store.all<{ type: string; data: Record<string, unknown> }>('webhook_events')) if (e.type === 'integration_gateway.status_changed') emitted.push(e.data);
    t.same(emitted, [{ gateway_id: g.id, status: 'active' }]);

    // Permissions: viewer and developer read; only owner and admin change.
    const viewer = await s.acme.key('viewer');
    const developer = await s.acme.key('developer');
    t.equal((await s.bearer('GET', `/v1/integration-gateways/${g.id}`, undefined, viewer)).statusCode, 200);
    for (const token of [viewer, developer]) {
      t.equal((await post(body, 'k3', token)).json().code, 'role_denied');
      t.equal((await status(g.id, 'disabled', token)).json().code, 'role_denied');
    }
    t.equal((await s.bearer('GET', `/v1/integration-gateways/${g.id}`)).json().status, 'active', 'read back: a denied call changed nothing');

    // Another tenant: 404 for every operation; its list is empty.
    for (const [m, path, b] of [['GET', '', undefined], ['PATCH', '', { name: 'x' }], ['POST', '/status', { status: 'disabled' }], ['POST', '/pin-cert', { current: gw.cert.pin }], ['POST', '/conformance', undefined], ['GET', '/events', undefined]] as const) {
      const r = await s.bearer(m, `/v1/integration-gateways/${g.id}${path}`, b, s.globex.owner);
      t.same([r.statusCode, r.json().code], [404, 'not_found'], `${m} ${path}`);
    }
    t.same((await s.bearer('GET', '/v1/integration-gateways', undefined, s.globex.owner)).json().data, []);

    // The history, a page at a time.
    const page1 = (await s.bearer('GET', `/v1/integration-gateways/${g.id}/events?limit=2`)).json();
    t.equal(page1.has_more, true);
    const page2 = (await s.bearer('GET', `/v1/integration-gateways/${g.id}/events?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`)).json();
    t.same([...page1.data, ...page2.data].map((e: { type: string }) => e.type), ['created', 'updated', 'status_changed']);
    const audit = (await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action.startsWith('integration_gateway.'));
    t.same(audit.map((e) => e.action), ['integration_gateway.create', 'integration_gateway.update', 'integration_gateway.status', 'integration_gateway.create']);
  });

  t.test('conformance: the reference gateway passes every check once its self-signed key is pinned', async (t) => {
    const s = await fundingApp(t, OPTS);
    const { gw, id } = await withGateway(t, s);
    // Unpinned, its self-signed certificate is not trusted: the run fails, nothing is sent.
    const unpinned = await conformance(s, id);
    t.equal(unpinned.statusCode, 201, unpinned.body);
    t.equal(unpinned.json().passed, false);
    t.match(unpinned.json().checks[0], { name: 'request_signature', passed: false, detail: /no answer: the gateway could not be reached, or its certificate is not trusted/ });
    t.equal(gw.requests.length, 0, 'no request reached the gateway');

    t.equal((await pin(s, id, { current: 'not a pin' })).json().code, 'invalid_request');
    t.equal((await pin(s, id, { current: `${'A'.repeat(43)}=`, next: `${'A'.repeat(43)}=` })).json().code, 'validation_failed', 'next must differ');
    t.equal((await s.bearer('GET', `/v1/integration-gateways/${id}`)).json().pins, null, 'read back: refused pins changed nothing');
    const pinned = await pin(s, id, { current: gw.cert.pin });
    t.same([pinned.statusCode, pinned.json().pins.current, pinned.json().pins.next], [200, gw.cert.pin, null]);

    const run = await conformance(s, id);
    t.equal(run.statusCode, 201);
    const r = run.json();
    t.same(r.checks.filter((c: { passed: boolean }) => !c.passed), [], 'every check passes');
    t.same(r.checks.map((c: { name: string }) => c.name), [...SUITE_CHECKS]);
    t.match(r, { passed: true, suite_version: 1, base_url: gw.url, gateway_id: id });
    t.match((await s.bearer('GET', `/v1/integration-gateways/${id}`)).json().conformance, { run_id: r.id, passed: true, suite_version: 1 });
    t.same((await events(s, id)).map((e) => e.type), ['created', 'conformance_run', 'pin_changed', 'conformance_run']);
    t.equal(await s.store.count('integration_gateway_conformance_callbacks'), 0, 'the run cleared its callbacks');
    t.ok(gw.callbacks.length >= 7 && gw.callbacks.every((c) => c.status === 200 || c.status === 401), 'the gateway called back');
  });

  t.test('conformance: a gateway breaking one rule fails that check, for that reason', async (t) => {
    const s = await fundingApp(t, OPTS);
    const expected: Record<Misbehaviour, [string, RegExp]> = {
      accepts_unsigned: ['request_signature', /an unsigned submission: answered 201, the protocol says 401/],
      malformed_answer: ['submit', /malformed answer: amount must be a positive integer of minor units, as a string/],
      not_idempotent: ['idempotent_resubmission', /answered 201/],
      no_status_read: ['status_read', /answered 404 not_found/],
      bad_callback_signature: ['settlement_callback', /the callback was refused: .*signature does not verify/],
      wrong_failure_reason: ['failure:insufficient_funds', /the callback says failed, rejected_by_bank; the sandbox table says failed, insufficient_funds/],
      no_return: ['return:payment_stopped', /the callback says settled; the sandbox table says returned, payment_stopped/],
      forgets_timed_out: ['timeout_retry', /the retry after a timeout created the transfer \(201\)/],
      lenient_parsing: ['malformed_request', /an amount sent as a JSON number: answered 201, the protocol says 400/],
    };
    // One gateway per way of breaking the protocol, run side by side.
    const runs = await Promise.all(MISBEHAVIOURS.map(async (m) => {
      const { gw, id } = await withGateway(t, s, m);
      await pin(s, id, { current: gw.cert.pin });
      return (await conformance(s, id)).json();
    }));
    for (const [i, m] of MISBEHAVIOURS.entries()) {
      const run = runs[i];
      const [name, why] = expected[m];
      const c = run.checks.find((x: { name: string }) => x.name === name);
      t.equal(run.passed, false, `${m}: the run fails`);
      t.equal(c.passed, false, `${m}: ${name} fails`);
      t.match(c.detail, why, `${m}: ${c.detail}`);
      if (m !== 'malformed_answer') t.equal(run.checks.find((x: { name: string }) => x.name === 'submit').passed, true, `${m}: the other checks still run`);
    }
  });

  t.test('pinning: a key that matches no pin fails closed before anything is sent; next covers a rotation', async (t) => {
    const s = await fundingApp(t, OPTS);
    const { gw, id } = await withGateway(t, s);
    const other = selfSignedCertificate();
    await pin(s, id, { current: other.pin });
    const run = (await conformance(s, id)).json();
    t.match(run.checks[0], { passed: false, detail: /matches no pinned SPKI SHA-256: the call was not made/ });
    t.equal(gw.requests.length, 0, 'no request reached the gateway');
    const failed = (await events(s, id)).filter((e) => e.type === 'call_failed');
    t.equal(failed.length, 0, 'conformance failures are the run\'s, not the history\'s call failures');

    // Traffic: active, a funding request's submission fails closed and is recorded.
    await pin(s, id, { current: gw.cert.pin });
    t.equal((await conformance(s, id)).json().passed, true);
    await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'active' });
    await pin(s, id, { current: other.pin });
    const h = await s.holder();
    const before = gw.requests.length;
    const fr = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: '2500', currency: 'USD' }, s.acme.owner, { 'idempotency-key': 'f1' });
    t.same([fr.statusCode, fr.json().status, fr.json().rail], [201, 'pending', id], 'the request waits; nothing was submitted');
    t.equal(gw.requests.length, before, 'the gateway saw nothing');
    const mismatch = (await events(s, id)).filter((e) => e.type === 'call_failed');
    t.match(mismatch, [{ data: { category: 'certificate_mismatch', code: 'certificate_pin_mismatch' } }], 'the mismatch is in the history, once');
    await s.service.runDue();
    t.equal((await events(s, id)).filter((e) => e.type === 'call_failed').length, 1, 'a repeat within a minute is not written again');

    // Rotation: the gateway's new key is pinned as next; both verify during the overlap.
    const rotated = gw.rotateCertificate();
    await pin(s, id, { current: other.pin, next: rotated.pin });
    await s.service.runDue();
    t.ok(['fiat_settling', 'minting'].includes((await FUNDING_REQUESTS.in(s.store).get(fr.json().id))!.status), 'the next pin lets the submission through');
  });

  t.test('a funding request settles end to end through the gateway; callbacks are checked; suspended and disabled', async (t) => {
    const s = await fundingApp(t, OPTS);
    const { gw, id } = await withGateway(t, s);
    await pin(s, id, { current: gw.cert.pin });
    await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'active' });
    const h = await s.holder();
    const fund = async (key: string, cents = '2500') => {
      const r = await s.bearer('POST', '/v1/funding-requests', { account_holder_id: h.id, wallet_id: h.wallet.id, fiat_amount: cents, currency: 'USD' }, s.acme.owner, { 'idempotency-key': key });
      t.equal(r.statusCode, 201, r.body);
      return r.json();
    };
    const waitFor = async (fid: string, status: string) => {
      for (let i = 0; i < 500; i++) {
        if ((await FUNDING_REQUESTS.in(s.store).get(fid))!.status === status) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      return false;
    };
    /** The gateway's transfer for a request, once the gateway resolved it. */
    const resolved = async (fid: string) => {
      for (let i = 0; i < 500; i++) {
        const x = [...gw.transfers.values()].find((y) => y.reference === fid);
        if (x && x.status !== 'pending') return x;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`the gateway did not resolve ${fid}`);
    };
    const a = await fund('a');
    t.match(a, { status: 'fiat_settling', rail: id });
    t.match([...gw.transfers.values()].find((x) => x.reference === a.id), { direction: 'pull', amount: '2500', currency: 'USD' }, 'the gateway holds the pull');
    const mintsBefore = s.issuer.mints.length;
    t.ok(await waitFor(a.id, 'minting'), 'the gateway\'s signed settlement callback moved it to minting');
    // The state is stored before the mint is submitted: wait for the submission too.
    for (let i = 0; i < 500 && s.issuer.mints.length === mintsBefore; i++) await new Promise((r) => setTimeout(r, 20));
    const mint = s.issuer.mints.at(-1)!;
    s.issuer.status.set(mint.tx_hash, { state: 'final', block_number: 9 });
    await s.service.runDue();
    t.equal((await s.bearer('GET', `/v1/funding-requests/${a.id}`)).json().status, 'completed', 'settled end to end');

    // A refused amount fails at submission; a returned one is returned by callback.
    t.match(await fund('b', '100004'), { status: 'failed', failure_reason: 'account_invalid' });
    const c = await fund('c', '100003');
    t.ok(await waitFor(c.id, 'returned'));
    t.equal((await FUNDING_REQUESTS.in(s.store).get(c.id))!.return_reason, 'unauthorized_debit');

    // Callbacks: a bad signature, a replay and a foreign transfer are refused and change nothing.
    gw.callbacksOn = false;
    const d = await fund('d');
    const td = await resolved(d.id);
    const url = `${(s.gateways!).callbackUrl(id)}`;
    t.equal(await gw.callBack(td, url, { secret: ed25519.utils.randomSecretKey() }), 401, 'a wrongly signed callback is 401');
    t.equal((await FUNDING_REQUESTS.in(s.store).get(d.id))!.status, 'fiat_settling', 'read back: unchanged');
    t.equal(await gw.callBack({ ...td, amount: '999' }, url), 422, 'a callback with another amount is 422');
    t.equal((await FUNDING_REQUESTS.in(s.store).get(d.id))!.status, 'fiat_settling', 'read back: unchanged');
    t.ok((await events(s, id)).some((e) => e.type === 'callback_refused'), 'refused callbacks are in the history');
    // The lost callback is recovered by polling (the sweep).
    await s.service.runDue();
    t.equal((await FUNDING_REQUESTS.in(s.store).get(d.id))!.status, 'minting', 'the sweep read the settlement');

    // Suspended: no new transfers (the service rail serves the workspace again), in-flight ones go on.
    const e = await fund('e');
    await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'suspended' });
    const f = await fund('f');
    await resolved(e.id);
    t.equal(f.rail, 'sandbox', 'a new request goes to the service\'s rail');
    await s.service.runDue();
    t.equal((await FUNDING_REQUESTS.in(s.store).get(e.id))!.status, 'minting', 'the suspended gateway\'s in-flight transfer still settles (polled)');

    // Disabled: its in-flight transfers are held, callbacks refused, nothing polled; active again resumes.
    const g2 = await (async () => {
      await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'active' });
      return fund('g');
    })();
    await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'disabled' });
    const tg = await resolved(g2.id);
    t.equal(await gw.callBack(tg, url), 403, 'a disabled gateway\'s callback is refused');
    const seen = gw.requests.length;
    await s.service.runDue();
    t.equal(gw.requests.length, seen, 'nothing is polled');
    t.equal((await FUNDING_REQUESTS.in(s.store).get(g2.id))!.status, 'fiat_settling', 'held as it was');
    await s.bearer('POST', `/v1/integration-gateways/${id}/status`, { status: 'active' });
    await s.service.runDue();
    t.equal((await FUNDING_REQUESTS.in(s.store).get(g2.id))!.status, 'minting', 'active again: polled and settled');
    t.same((await events(s, id)).filter((x) => x.type === 'status_changed').map((x) => x.data.to), ['active', 'suspended', 'active', 'disabled', 'active']);
  });

  t.test('production: changes are request-signed, and a gateway is activated only after a passing run', async (t) => {
    const s = await fundingApp(t, OPTS);
    const gw = await new ReferenceGateway({ now: () => s.clock.now() }).start();
    t.teardown(() => gw.stop());
    const sk = ed25519.utils.randomSecretKey();
    const live = await s.platform.tenancy.createKey(s.acme.production.id, 'owner', { signingPublicKey: bytesToHex(ed25519.getPublicKey(sk)) });
    const call = (method: 'POST' | 'GET', path: string, body?: unknown, sign = true) => {
      const raw = body === undefined ? undefined : JSON.stringify(body);
      const sig = sign && method !== 'GET' ? signedHeaders({ keyId: live.key.id, secretKey: sk }, method, `http://localhost:80${path}`, raw, Math.floor(s.clock.now() / 1000)) : {};
      return s.app.inject({ method, url: path, headers: { host: 'localhost:80', authorization: `Bearer ${live.token}`, ...(raw ? { 'content-type': 'application/json' } : {}), ...sig }, ...(raw ? { payload: raw } : {}) });
    };
    const body = { name: 'Live core', base_url: gw.url, callback_public_key: gw.callbackPublicKey };
    const unsigned = await call('POST', '/v1/integration-gateways', body, false);
    t.same([unsigned.statusCode, unsigned.json().code], [401, 'signature_required']);
    t.equal(await s.store.count('integration_gateways'), 0, 'nothing stored');
    const made = await call('POST', '/v1/integration-gateways', body);
    t.equal(made.statusCode, 201, made.body);
    const g = made.json();
    t.equal(g.environment, 'production');
    Object.assign(gw, { gatewayId: g.id, serviceKeyId: g.service_key.keyid, servicePublicKey: g.service_key.public_key });
    const early = await call('POST', `/v1/integration-gateways/${g.id}/status`, { status: 'active' });
    t.same([early.statusCode, early.json().code], [409, 'conformance_required']);
    t.equal((await call('GET', `/v1/integration-gateways/${g.id}`)).json().status, 'suspended', 'read back: still suspended');
    t.equal((await call('POST', `/v1/integration-gateways/${g.id}/pin-cert`, { current: gw.cert.pin })).statusCode, 200);
    const run = await call('POST', `/v1/integration-gateways/${g.id}/conformance`);
    t.equal(run.json().passed, true, run.body);
    t.ok(gw.requests.length > 0 && [...gw.transfers.values()].every((x) => x.reference.startsWith('cnf_')), 'the suite ran in sandbox mode with its own references');
    const on = await call('POST', `/v1/integration-gateways/${g.id}/status`, { status: 'active' });
    t.same([on.statusCode, on.json().status, on.json().serving], [200, 'active', true]);
  });
});
