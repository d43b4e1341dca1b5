// The protobuf-es -> grpc-js adapter carries every method kind over a real loopback connection.
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { addService, createClient, GrpcStatusError } from '../../proto/grpc.ts';
import { EchoService, type EchoResponse } from '../../proto/gen/testing/v1/echo_pb.ts';

async function startServer(): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server();
  addService(server, EchoService, {
    async echo(req) {
      if (req.text === 'fail') throw new GrpcStatusError(grpc.status.FAILED_PRECONDITION, 'asked to fail');
      if (req.text === 'crash') throw new Error('unexpected');
      return { text: req.text.toUpperCase(), payload: req.payload };
    },
    async expand(req, call) {
      for (let i = 0; i < req.repeat; i++) call.write({ text: req.text, index: i });
      call.end();
    },
    async collect(call) {
      const parts: string[] = [];
      for await (const req of call) parts.push(req.text);
      return { text: parts.join('+'), index: parts.length };
    },
    chat(call) {
      let i = 0;
      call.on('data', (req) => call.write({ text: `re:${req.text}`, index: i++ }));
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, address: `127.0.0.1:${port}` };
}

t.test('unary, server-streaming, client-streaming and bidi calls round-trip', async (t) => {
  const { server, address } = await startServer();
  const client = createClient(EchoService, address, grpc.credentials.createInsecure());
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });

  const payload = new Uint8Array([0, 1, 2, 255]);
  const res = await client.echo({ text: 'hello', payload });
  t.equal(res.text, 'HELLO');
  t.same([...res.payload], [...payload], 'bytes survive the trip');
  t.equal(res.$typeName, 'testing.v1.EchoResponse');

  const streamed: EchoResponse[] = [];
  for await (const m of client.expand({ text: 'x', repeat: 3 })) streamed.push(m as EchoResponse);
  t.same(streamed.map((m) => m.index), [0, 1, 2]);

  const { stream, response } = client.collect();
  for (const s of ['a', 'b', 'c']) stream.write({ text: s });
  stream.end();
  const collected = await response;
  t.equal(collected.text, 'a+b+c');
  t.equal(collected.index, 3);

  const chat = client.chat();
  const replies: string[] = [];
  const done = new Promise<void>((resolve) => {
    chat.on('data', (m: EchoResponse) => replies.push(m.text));
    chat.on('end', () => resolve());
  });
  chat.write({ text: 'one' });
  chat.write({ text: 'two' });
  chat.end();
  await done;
  t.same(replies, ['re:one', 're:two']);
});

t.test('handler errors map to gRPC statuses', async (t) => {
  const { server, address } = await startServer();
  const client = createClient(EchoService, address, grpc.credentials.createInsecure());
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  await t.rejects(client.echo({ text: 'fail' }), { code: grpc.status.FAILED_PRECONDITION, details: 'asked to fail' });
  await t.rejects(client.echo({ text: 'crash' }), { code: grpc.status.INTERNAL });
});

t.test('a deadline in the past fails the call', async (t) => {
  const { server, address } = await startServer();
  const client = createClient(EchoService, address, grpc.credentials.createInsecure());
  t.teardown(() => {
    client.close();
    server.forceShutdown();
  });
  await t.rejects(client.echo({ text: 'late' }, { deadline: Date.now() - 1 }), { code: grpc.status.DEADLINE_EXCEEDED });
});
