// A small S3-compatible server on loopback for tests: path-style buckets, PUT/GET/HEAD/DELETE of objects, every
// request authenticated by SigV4 (presigned query or Authorization header) through the independent
// verifier, with S3's status codes and XML error bodies. It stores bytes in memory.
import type { Test } from 'tap';
import { loopbackServer } from './loopback-server.ts';
import { createHash } from 'node:crypto';
import { verifySigV4, type VerifyResult } from './sigv4-verifier.ts';

export interface S3Log { method: string; key: string; form?: 'query' | 'header'; status: number; code?: string }

export async function s3Double(t: Test, o: { bucket: string; region: string; keys: Record<string, string>; sessionTokens?: Record<string, string>; clock: () => number }) {
  const objects = new Map<string, { bytes: Buffer; contentType: string; etag: string }>();
  const log: S3Log[] = [];
  let lastFailure: VerifyResult | undefined;
  const endpoint = await loopbackServer(t, (req, body, res) => {
    const rawUrl = req.url ?? '/';
    const path = rawUrl.split('?')[0]!;
    const [, bucket = '', ...keyParts] = path.split('/');
    const key = decodeURIComponent(keyParts.join('/'));
    const method = req.method ?? 'GET';
    const error = (status: number, code: string, message: string) => {
      log.push({ method, key, status, code });
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><Key>${key}</Key><RequestId>0</RequestId></Error>`;
      res.writeHead(status, { 'content-type': 'application/xml' }).end(method === 'HEAD' ? undefined : xml);
    };
    const v = verifySigV4({ method, rawUrl, headers: req.headers, body }, { service: 's3', region: o.region, keys: o.keys, ...(o.sessionTokens ? { sessionTokens: o.sessionTokens } : {}), nowMs: o.clock(), doubleEncodePath: false });
    if (!v.ok) {
      lastFailure = v;
      return error(v.status, v.code, v.message);
    }
    if (bucket !== o.bucket) return error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    if (!key) return error(400, 'InvalidRequest', 'this double serves objects only');
    if (method === 'PUT') {
      if (req.headers['content-length'] === undefined) return error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
      const etag = `"${createHash('md5').update(body).digest('hex')}"`;
      objects.set(key, { bytes: body, contentType: req.headers['content-type'] ?? 'binary/octet-stream', etag });
      log.push({ method, key, form: v.form, status: 200 });
      return res.writeHead(200, { etag }).end();
    }
    if (method === 'DELETE') {
      // S3 answers 204 whether or not the object existed.
      objects.delete(key);
      log.push({ method, key, form: v.form, status: 204 });
      return res.writeHead(204).end();
    }
    if (method === 'GET' || method === 'HEAD') {
      const obj = objects.get(key);
      if (!obj) return error(404, 'NoSuchKey', 'The specified key does not exist.');
      log.push({ method, key, form: v.form, status: 200 });
      res.writeHead(200, { 'content-type': obj.contentType, 'content-length': String(obj.bytes.length), etag: obj.etag });
      return res.end(method === 'HEAD' ? undefined : obj.bytes);
    }
    return error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
  });
  return { endpoint, objects, log, lastFailure: () => lastFailure };
}
