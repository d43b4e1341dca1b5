// The gRPC edge of the error model over a real grpc-js server and client in this process: every kind
// leaves as its status with code, kind, message and culprits as structured details and arrives as the
// same CustodyError; anything else arrives as `internal` without its text; details that are missing,
// garbage, oversized or name an unregistered code are not trusted.
import t, { type Test } from 'tap';
import * as grpc from '@grpc/grpc-js';
import { create, toBinary } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { addService, createClient, GrpcStatusError } from '../../../proto/grpc.ts';
import { EchoService } from '../../../proto/gen/testing/v1/echo_pb.ts';
import { StatusSchema } from '../../../proto/gen/google/rpc/status_pb.ts';
import { ErrorInfoSchema } from '../../../proto/gen/mpc/v1/error_pb.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { ERROR_CODES, type ErrorCode } from '../../../core/errors/error-codes.ts';
import { ERROR_KINDS, type ErrorKind } from '../../../core/errors/error-kinds.ts';
import { ProtocolAbort } from '../../../core/errors/protocol-errors.ts';
import { fromRpcError, isServiceError, rpcFailure, STATUS_DETAILS_KEY, toRpcError } from '../../../core/rpc/rpc-error.ts';

// Written out here, not imported, so a change of the table in rpc-error.ts fails this test.
const EXPECTED: Record<ErrorKind, grpc.status> = {
  invalid: grpc.status.INVALID_ARGUMENT,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  refused: grpc.status.PERMISSION_DENIED,
  not_found: grpc.status.NOT_FOUND,
  conflict: grpc.status.FAILED_PRECONDITION,
  limited: grpc.status.RESOURCE_EXHAUSTED,
  aborted: grpc.status.ABORTED,
  unavailable: grpc.status.UNAVAILABLE,
  transport: grpc.status.UNAVAILABLE,
  bug: grpc.status.INTERNAL,
};

/** One registered code of each kind. */
const codeOf = (kind: ErrorKind) => (Object.keys(ERROR_CODES) as ErrorCode[]).find((c) => ERROR_CODES[c].kind === kind)!;

/** A status with hand-made details, as another server or a broken peer might send. */
function rawStatus(code: grpc.status, details: Uint8Array | undefined): GrpcStatusError {
  const md = new grpc.Metadata();
  if (details !== undefined) md.set(STATUS_DETAILS_KEY, Buffer.from(details));
  return new GrpcStatusError(code, 'raw status text', md);
}

const statusBytes = (code: grpc.status, info: { code: string; kind?: string; message?: string; culprits?: string[] }) =>
  toBinary(StatusSchema, create(StatusSchema, { code, message: 'm', details: [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, info))] }));

// What each request text makes the server throw.
const throws = new Map<string, () => unknown>();
for (const kind of ERROR_KINDS) {
  throws.set(`kind:${kind}`, () => new CustodyError(codeOf(kind), `a ${kind} error`, { culprits: kind === 'aborted' ? ['node-b', 'node-c'] : [] }));
}
throws.set('plain', () => new Error('secret detail /var/keys/share-1'));
throws.set('thrown-string', () => 'a bare string');
throws.set('abort-indices', () => new ProtocolAbort('bad_proof', [2, 3], 'party 2 sent a bad proof'));
throws.set('long', () => new CustodyError('digest_mismatch', 'x'.repeat(10_000), { culprits: Array.from({ length: 500 }, (_, i) => `node-${i}`) }));
throws.set('garbage', () => rawStatus(grpc.status.PERMISSION_DENIED, new Uint8Array([0xff, 0xff, 0xff, 0x01, 0x02])));
throws.set('text-details', () => rawStatus(grpc.status.PERMISSION_DENIED, undefined));
throws.set('unregistered', () => rawStatus(grpc.status.PERMISSION_DENIED, statusBytes(grpc.status.PERMISSION_DENIED, { code: 'made_up_code', message: 'from a newer peer' })));
throws.set('mismatch', () => rawStatus(grpc.status.ABORTED, statusBytes(grpc.status.PERMISSION_DENIED, { code: 'digest_mismatch', message: 'status code differs' })));
throws.set('oversized', () => rawStatus(grpc.status.PERMISSION_DENIED, statusBytes(grpc.status.PERMISSION_DENIED, { code: 'digest_mismatch', message: 'y'.repeat(20_000) })));
throws.set('no-details-unavailable', () => rawStatus(grpc.status.UNAVAILABLE, undefined));
throws.set('no-error-info', () => rawStatus(grpc.status.NOT_FOUND, toBinary(StatusSchema, create(StatusSchema, { code: grpc.status.NOT_FOUND, message: 'no info' }))));

async function start(t: Test) {
  const server = new grpc.Server();
  addService(server, EchoService, {
    async echo(req) {
      const make = throws.get(req.text);
      if (!make) return { text: req.text };
      const err = make();
      throw err instanceof GrpcStatusError ? err : toRpcError(err);
    },
    async expand(req, call) {
      call.write({ text: req.text, index: 0 });
      throw toRpcError(new CustodyError('ot_busy', 'busy mid-stream'));
    },
    async collect() {
      return {};
    },
    chat(call) {
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const client = createClient(EchoService, `127.0.0.1:${port}`, grpc.credentials.createInsecure());
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  /** The raw ServiceError a call fails with. */
  const fail = async (text: string, deadline?: number) => {
    const err = await client.echo({ text }, deadline === undefined ? {} : { deadline }).then(() => undefined, (e: unknown) => e);
    if (!isServiceError(err)) throw new Error(`${text}: expected a ServiceError, got ${String(err)}`);
    return err;
  };
  return { client, fail };
}

t.test('every kind crosses with its status, code, kind, message and culprits as structured details', async (t) => {
  const { fail } = await start(t);
  for (const kind of ERROR_KINDS) {
    const code = codeOf(kind);
    const raw = await fail(`kind:${kind}`);
    t.equal(raw.code, EXPECTED[kind], `${kind}: gRPC status`);
    t.equal(raw.details, `a ${kind} error`, `${kind}: the status text is the message alone, no code or culprits in it`);
    t.ok(raw.metadata.get(STATUS_DETAILS_KEY)[0] instanceof Buffer, `${kind}: details in the ${STATUS_DETAILS_KEY} trailer`);
    const e = fromRpcError(raw);
    t.ok(e instanceof CustodyError, `${kind}: a CustodyError`);
    t.same({ code: e.code, kind: e.kind, message: e.message, culprits: e.culprits }, {
      code, kind, message: `a ${kind} error`, culprits: kind === 'aborted' ? ['node-b', 'node-c'] : [],
    }, `${kind}: arrives as ${code}`);
    t.equal(e.cause, raw, `${kind}: the ServiceError is the cause`);
  }
});

t.test('protocol culprits (party indices) cross as strings; long texts and lists are bounded', async (t) => {
  const { fail } = await start(t);
  const abort = fromRpcError(await fail('abort-indices'));
  t.same({ code: abort.code, kind: abort.kind, culprits: abort.culprits }, { code: 'bad_proof', kind: 'aborted', culprits: ['2', '3'] });
  const long = fromRpcError(await fail('long'));
  t.equal(long.code, 'digest_mismatch');
  t.ok(long.message.length <= 2000, 'message bounded');
  t.equal(long.culprits.length, 64, 'culprits bounded');
});

t.test('an error that is not a CustodyError arrives as internal, without its text', async (t) => {
  const { fail } = await start(t);
  for (const which of ['plain', 'thrown-string']) {
    const raw = await fail(which);
    t.equal(raw.code, grpc.status.INTERNAL, `${which}: INTERNAL`);
    t.notMatch(raw.details, /secret|bare string/, `${which}: the status text leaks nothing`);
    const e = fromRpcError(raw);
    t.same({ code: e.code, kind: e.kind }, { code: 'internal', kind: 'bug' }, which);
    t.notMatch(e.message, /secret|bare string/, `${which}: the message leaks nothing`);
  }
});

t.test('details that cannot be trusted are not', async (t) => {
  const { fail } = await start(t);
  const rows: [string, ErrorCode, RegExp][] = [
    ['garbage', 'rpc_error', /raw status text/],
    ['text-details', 'rpc_error', /raw status text/],
    ['mismatch', 'rpc_error', /raw status text/],
    ['oversized', 'rpc_error', /raw status text/],
    ['no-error-info', 'rpc_error', /raw status text/],
    ['unregistered', 'rpc_error', /made_up_code.*from a newer peer/],
    ['no-details-unavailable', 'unavailable', /raw status text/],
  ];
  for (const [which, code, message] of rows) {
    const raw = await fail(which);
    const e = fromRpcError(raw);
    t.equal(e.code, code, `${which}: ${code}`);
    t.match(e.message, message, `${which}: message`);
    t.equal(e.cause, raw, `${which}: the ServiceError is the cause`);
  }
});

t.test('a missed deadline and an unreachable server arrive as unavailable', async (t) => {
  const { fail } = await start(t);
  const late = await fail('kind:invalid', Date.now() - 1);
  t.equal(late.code, grpc.status.DEADLINE_EXCEEDED);
  t.same({ code: fromRpcError(late).code, kind: fromRpcError(late).kind }, { code: 'unavailable', kind: 'unavailable' });
  const nowhere = createClient(EchoService, '127.0.0.1:1', grpc.credentials.createInsecure());
  t.teardown(() => nowhere.close());
  const err = await nowhere.echo({ text: 'x' }, { deadline: Date.now() + 2000 }).then(() => undefined, (e: unknown) => e);
  t.match(rpcFailure(err), { code: 'unavailable', kind: 'unavailable' });
});

t.test('a server stream that fails mid-way carries the details too', async (t) => {
  const { client } = await start(t);
  const stream = client.expand({ text: 'a' });
  const got: string[] = [];
  const err = await new Promise<unknown>((resolve) => {
    stream.on('data', (m: { text: string }) => got.push(m.text));
    stream.on('error', resolve);
  });
  t.same(got, ['a']);
  t.match(rpcFailure(err), { code: 'ot_busy', kind: 'unavailable', message: 'busy mid-stream' });
});

t.test('rpcFailure keeps a CustodyError and wraps anything else as rpc_error', async (t) => {
  const own = new CustodyError('unknown_key', 'no key k');
  t.equal(rpcFailure(own), own);
  const wrapped = rpcFailure(new TypeError('serialize failed'));
  t.match(wrapped, { code: 'rpc_error', kind: 'transport', message: 'serialize failed' });
});
