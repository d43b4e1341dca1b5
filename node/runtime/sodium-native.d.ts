// The few libsodium bindings of sodium-native (5.x) that the node's primitives call; the package ships
// no types of its own. Each writes into its first argument and throws a TypeError on a wrong length.
declare module 'sodium-native' {
  type Bytes = Uint8Array;
  const sodium: {
    crypto_hash_sha256(out: Bytes, input: Bytes): void;
    crypto_stream_chacha20_ietf(out: Bytes, nonce: Bytes, key: Bytes): void;
    crypto_stream_xchacha20(out: Bytes, nonce: Bytes, key: Bytes): void;
  };
  export default sodium;
}
