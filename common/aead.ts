// ChaCha20-Poly1305 (RFC 8439 §2.8) and XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha §2) on libsodium
// (sodium-native), for the node's envelopes and sealed records: the same bytes as noble's
// `chacha20poly1305` and `xchacha20poly1305` (ciphertext ‖ 16-byte tag), which the tests check, at a
// fraction of the cost: a signing opens and seals several of each per node. `open` throws on a tag that
// does not verify, as noble's `decrypt` does; callers map that to their own error.
import sodium from 'sodium-native';

const TAG = 16;

export interface Aead {
  seal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  open(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array;
}

function aead(nonceBytes: number, enc: typeof sodium.crypto_aead_chacha20poly1305_ietf_encrypt, dec: typeof sodium.crypto_aead_chacha20poly1305_ietf_decrypt): Aead {
  const check = (key: Uint8Array, nonce: Uint8Array) => {
    if (key.length !== 32) throw new RangeError('aead: key must be 32 bytes');
    if (nonce.length !== nonceBytes) throw new RangeError(`aead: nonce must be ${nonceBytes} bytes`);
  };
  return Object.freeze({
    seal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
      check(key, nonce);
      const out = new Uint8Array(plaintext.length + TAG);
      enc(out, plaintext, aad, null, nonce, key);
      return out;
    },
    open(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
      check(key, nonce);
      if (ciphertext.length < TAG) throw new Error('aead: ciphertext shorter than its tag');
      const out = new Uint8Array(ciphertext.length - TAG);
      dec(out, null, ciphertext, aad, nonce, key);
      return out;
    },
  });
}

export const chacha20Poly1305: Aead = aead(12, sodium.crypto_aead_chacha20poly1305_ietf_encrypt, sodium.crypto_aead_chacha20poly1305_ietf_decrypt);
export const xchacha20Poly1305: Aead = aead(24, sodium.crypto_aead_xchacha20poly1305_ietf_encrypt, sodium.crypto_aead_xchacha20poly1305_ietf_decrypt);
