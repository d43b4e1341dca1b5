// Byte helpers: UTF-8 and hex. The length-prefixed transcript encoding and tagged hashes are in
// core/codec/transcript.ts; common/ imports nothing of the project.

export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export function fromHex(s: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/i.test(s)) throw new Error('not a hex string');
  return new Uint8Array(Buffer.from(s, 'hex'));
}
