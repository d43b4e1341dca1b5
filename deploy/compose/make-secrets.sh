#!/bin/sh
# Makes the secret files deploy/compose/compose.yaml mounts (docs/operations.md "Running with compose"),
# once: a private CA, the coordinators' server certificate (for the names `coordinator` and `coordinator-b`), client
# certificates for the nodes and the API, the operator API token, the PostgreSQL password and the
# operator's Ed25519 key (hex, as `npm start` makes it). Existing files are kept. Needs openssl.
# The signed roster (secrets/roster.hex) is made afterwards from the nodes' identities.
# For anything beyond one machine, issue the certificates from your own CA instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/secrets"
mkdir -p "$dir"
chmod 0700 "$dir"
cd "$dir"
umask 077

hex() { od -An -v -tx1 | tr -d ' \n'; }

if [ ! -f ca.key ]; then
  openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 825 -subj "/CN=custody compose CA" -out ca.pem
fi
issue() { # name, subject CN, extensions
  [ -f "$1.pem" ] && return 0
  openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 825 -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
issue coordinator coordinator "subjectAltName=DNS:coordinator,DNS:coordinator-b,DNS:localhost
extendedKeyUsage=serverAuth"
issue node custody-node "extendedKeyUsage=clientAuth"
issue api custody-api "extendedKeyUsage=clientAuth"

[ -f operator-api.token ] || openssl rand -base64 32 > operator-api.token
[ -f postgres-password ] || openssl rand -base64 32 > postgres-password

if [ ! -f operator.key ]; then
  openssl genpkey -algorithm ed25519 -out operator.pem
  # The raw 32-byte seed and public key are the last 32 bytes of their DER encodings.
  openssl pkey -in operator.pem -outform DER | tail -c 32 | hex > operator.key
  openssl pkey -in operator.pem -pubout -outform DER | tail -c 32 | hex > operator.pub
  rm -f operator.pem
fi

# The files are bind-mounted into containers that run as uid 1000: readable there, while this
# directory (0700) keeps other users of the host out. The CA key and the operator key are mounted
# nowhere: keep them offline once the setup is done.
chmod 0644 ca.pem coordinator.pem coordinator.key node.pem node.key api.pem api.key operator-api.token postgres-password
printf 'CUSTODY_OPERATOR_PUBLIC_KEY=%s\n' "$(cat operator.pub)" > "$here/.env"
echo "secrets in $dir; operator public key in $here/.env"
