// The few libsodium bindings of sodium-native (5.x) that the project calls; the package ships no types of
// its own. Each writes into its first argument and throws on a wrong length; the AEAD decryptions throw
// when the tag does not verify.
declare module 'sodium-native' {
  type Bytes = Uint8Array;
  const sodium: {
    crypto_hash_sha256(out: Bytes, input: Bytes): void;
    crypto_stream_chacha20_ietf(out: Bytes, nonce: Bytes, key: Bytes): void;
    crypto_stream_xchacha20(out: Bytes, nonce: Bytes, key: Bytes): void;
    crypto_aead_chacha20poly1305_ietf_encrypt(c: Bytes, m: Bytes, ad: Bytes | null, nsec: null, npub: Bytes, k: Bytes): number;
    crypto_aead_chacha20poly1305_ietf_decrypt(m: Bytes, nsec: null, c: Bytes, ad: Bytes | null, npub: Bytes, k: Bytes): number;
    crypto_aead_xchacha20poly1305_ietf_encrypt(c: Bytes, m: Bytes, ad: Bytes | null, nsec: null, npub: Bytes, k: Bytes): number;
    crypto_aead_xchacha20poly1305_ietf_decrypt(m: Bytes, nsec: null, c: Bytes, ad: Bytes | null, npub: Bytes, k: Bytes): number;
  };
  export default sodium;
}
