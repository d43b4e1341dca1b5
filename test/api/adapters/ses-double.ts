// A local double of the Amazon SES v2 email-identity API on loopback, following the API reference:
// CreateEmailIdentity (POST /v2/email/identities), GetEmailIdentity and DeleteEmailIdentity
// (GET/DELETE /v2/email/identities/{EmailIdentity}); REST-JSON bodies; errors with X-Amzn-ErrorType and
// {"message"}; every request SigV4-signed (service "ses") and checked by the independent verifier.
// Test controls: the DKIM status of an identity, domains SES refuses, and a forced next error.
import type { Test } from 'tap';
import { loopbackServer } from './loopback-server.ts';
import { randomBytes } from 'node:crypto';
import { verifySigV4 } from './sigv4-verifier.ts';

type Status = 'PENDING' | 'SUCCESS' | 'FAILED' | 'TEMPORARY_FAILURE' | 'NOT_STARTED';
interface Identity { tokens: string[]; status: Status }

export async function sesDouble(t: Test, o: { region: string; keys: Record<string, string>; clock: () => number }) {
  const identities = new Map<string, Identity>();
  const refused = new Set<string>();
  const calls: { method: string; path: string; status: number; type?: string }[] = [];
  let forced: { status: number; type: string } | undefined;
  const endpoint = await loopbackServer(t, (req, body, res) => {
    const rawUrl = req.url ?? '/';
    const path = rawUrl.split('?')[0]!;
    const method = req.method ?? 'GET';
    const send = (status: number, json: unknown, type?: string) => {
      calls.push({ method, path, status, ...(type ? { type } : {}) });
      res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': randomBytes(8).toString('hex'), ...(type ? { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazonaws.sesv2/` } : {}) });
      res.end(JSON.stringify(json));
    };
    const error = (status: number, type: string, message: string) => send(status, { message }, type);
    const v = verifySigV4({ method, rawUrl, headers: req.headers, body }, { service: 'ses', region: o.region, keys: o.keys, nowMs: o.clock(), doubleEncodePath: true });
    if (!v.ok) return error(403, v.code === 'InvalidAccessKeyId' ? 'UnrecognizedClientException' : v.code === 'RequestTimeTooSkewed' ? 'InvalidSignatureException' : 'SignatureDoesNotMatch', v.message);
    if (forced) {
      const f = forced;
      forced = undefined;
      return error(f.status, f.type, 'forced by the test');
    }
    const view = (id: Identity) => ({
      IdentityType: 'DOMAIN', VerifiedForSendingStatus: id.status === 'SUCCESS', VerificationStatus: id.status, FeedbackForwardingStatus: true,
      DkimAttributes: { SigningEnabled: true, Status: id.status, Tokens: id.tokens, SigningAttributesOrigin: 'AWS_SES', CurrentSigningKeyLength: 'RSA_2048_BIT' },
      Policies: {}, Tags: [],
    });
    if (path === '/v2/email/identities' && method === 'POST') {
      let input: { EmailIdentity?: unknown };
      try {
        input = JSON.parse(body.toString('utf8')) as { EmailIdentity?: unknown };
      } catch {
        return error(400, 'BadRequestException', 'Request body is not valid JSON');
      }
      if (req.headers['content-type'] !== 'application/json') return error(400, 'BadRequestException', 'Content-Type must be application/json');
      const name = input.EmailIdentity;
      if (typeof name !== 'string' || !name) return error(400, 'BadRequestException', '1 validation error detected: Value null at \'emailIdentity\' failed to satisfy constraint: Member must not be null');
      if (refused.has(name)) return error(400, 'BadRequestException', `Email identity ${name} is invalid`);
      if (identities.has(name)) return error(400, 'AlreadyExistsException', `Email identity ${name} already exist.`);
      const id: Identity = { tokens: Array.from({ length: 3 }, () => randomBytes(16).toString('hex')), status: 'PENDING' };
      identities.set(name, id);
      const { IdentityType, VerifiedForSendingStatus, DkimAttributes } = view(id);
      return send(200, { IdentityType, VerifiedForSendingStatus, DkimAttributes });
    }
    const m = /^\/v2\/email\/identities\/([^/]+)$/.exec(path);
    if (m) {
      const name = decodeURIComponent(m[1]!);
      const id = identities.get(name);
      if (method === 'GET') return id ? send(200, view(id)) : error(404, 'NotFoundException', `Email identity ${name} does not exist.`);
      if (method === 'DELETE') {
        if (!id) return error(404, 'NotFoundException', `Email identity ${name} does not exist.`);
        identities.delete(name);
        return send(200, {});
      }
    }
    return error(404, 'UnknownOperationException', 'no such operation');
  });
  return {
    endpoint,
    identities, refused, calls,
    setStatus: (domain: string, s: Status) => { identities.get(domain)!.status = s; },
    failNext: (status: number, type: string) => { forced = { status, type }; },
  };
}
