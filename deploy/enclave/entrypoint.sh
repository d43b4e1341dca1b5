#!/bin/sh
# The enclave's start (deploy/enclave/README.md). An enclave has no network, only vsock to its parent
# instance (CID 3). This script, run as root:
#   1. brings the loopback interface up (an enclave starts with it down);
#   2. for the coordinator, the node's host store (NODE_STORE_REMOTE: its store lives on the parent, an
#      enclave has no disk), and each ENCLAVE_FORWARDS entry (e.g. the KMS endpoint), makes the host name
#      resolve to a loopback address of its own and forwards TCP there to the parent over vsock, where
#      vsock-proxy (or socat) carries it on: the node dials the names it is configured with, and TLS runs
#      end to end from inside the enclave;
#   3. prints the node's public identity (node/identity-cli.ts), before the node holds its store;
#   4. in the background, publishes the node's enrolment (tee/attest-cli.ts with the NSM command) to the
#      parent on a vsock port, at start and every ENCLAVE_ENROLMENT_EVERY_S: the nodes accept an
#      attestation made at most 55 minutes before the enrolment is signed;
#   5. runs the node as the unprivileged `node` user.
# Everything it reads is in the image, so measured: NODE_CONFIG_FILE, the NODE_* and ENCLAVE_* variables.
set -eu

: "${NODE_CONFIG_FILE:=/etc/custody-node/node.json}"
: "${ENCLAVE_PARENT_CID:=3}"
: "${ENCLAVE_COORDINATOR_VSOCK_PORT:=7400}"
: "${ENCLAVE_FORWARDS:=}"
: "${ENCLAVE_ENROLMENT_VSOCK_PORT:=7401}"
: "${ENCLAVE_STORE_VSOCK_PORT:=7402}"
: "${ENCLAVE_ENROLMENT_EVERY_S:=1800}"
: "${ENCLAVE_NSM_COMMAND:=/etc/custody-node/nsm-attest}"
: "${ENCLAVE_RUN_DIR:=/run/custody-node}"
: "${ENCLAVE_APP_DIR:=/app}"
export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
cd "$ENCLAVE_APP_DIR"

log() { printf 'enclave: %s\n' "$*" >&2; }
as_node() { setpriv --reuid=node --regid=node --init-groups --no-new-privs -- "$@"; }

# One setting of node.json; the NODE_* variable of the same setting wins, as in node/config.ts.
setting() {
  node -e 'const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(String(c[process.argv[2]] ?? process.argv[3]))' "$NODE_CONFIG_FILE" "$1" "$2"
}
coordinator=${NODE_COORDINATOR:-$(setting coordinator 127.0.0.1:7400)}
owner=${NODE_OWNER:-$(setting owner '')}
kind=${NODE_KIND:-$(setting kind service)}
store_remote=${NODE_STORE_REMOTE:-$(setting storeRemote '')}
[ "$kind" = tee ] || { log "the node's kind is '$kind': an enclave node is configured with kind tee"; exit 78; }
[ -n "$owner" ] || { log "the node's owner (its organization) is not configured"; exit 78; }

# 1. Loopback: the kernel gives lo 127.0.0.1/8 when it comes up.
ip link set dev lo up

# 2. forward <host> <port> <vsock port>: the Nth forward listens on 127.0.1.N, so two hosts may share a
#    port; an IPv4 address is added to lo and listened on as it is. socat runs as `node`, allowed to bind
#    a port below 1024 (443 for KMS) and nothing else.
forwards=0
forward() {
  case $1 in
    \[*|*:*) log "forward $1:$2: an IPv6 address is not supported; use a host name"; exit 78 ;;
  esac
  if printf '%s' "$1" | grep -Eq '^[0-9]+(\.[0-9]+){3}$'; then
    ip addr add "$1/32" dev lo 2>/dev/null || true
    listen=$1
  else
    forwards=$((forwards + 1))
    listen=127.0.1.$forwards
    printf '%s %s\n' "$listen" "$1" >> /etc/hosts
  fi
  setpriv --reuid=node --regid=node --init-groups --no-new-privs --inh-caps=+net_bind_service --ambient-caps=+net_bind_service -- \
    socat "TCP-LISTEN:$2,bind=$listen,fork,reuseaddr" "VSOCK-CONNECT:$ENCLAVE_PARENT_CID:$3" &
  log "$1:$2 -> $listen:$2 -> vsock $ENCLAVE_PARENT_CID:$3"
}
forward "${coordinator%:*}" "${coordinator##*:}" "$ENCLAVE_COORDINATOR_VSOCK_PORT"
# The store: the parent runs `npm run enclave-host-store` behind socat VSOCK-LISTEN:7402 (README). Without
# it the store is in the enclave's memory and an enclave restart loses the node's identity and shares.
if [ -n "$store_remote" ]; then
  forward "${store_remote%:*}" "${store_remote##*:}" "$ENCLAVE_STORE_VSOCK_PORT"
else
  log "no NODE_STORE_REMOTE (storeRemote): the node's store is in enclave memory and does not outlive the enclave"
fi
# The rollback anchor must be held by parties other than the host: anchor keepers (docs/tee.md "A
# rollback anchor outside the parent"), each reached through an ENCLAVE_FORWARDS entry; their answers
# are signed and bound to the node's challenge, so the parent relays them without being able to forge
# or replay one. Without keepers the node runs with NODE_STORE_ACCEPT_UNVOUCHED, so every start deletes
# its OT setups and the material made ahead (fresh ones follow) instead of trusting the parent.
if [ -z "${NODE_ROLLBACK_ANCHOR_KEEPERS:-$(setting rollbackAnchorKeepers '')}" ]; then
  export NODE_STORE_ACCEPT_UNVOUCHED=true
  log "no anchor keepers outside the host: each start deletes the OT setups and the material made ahead"
fi
for entry in $ENCLAVE_FORWARDS; do
  target=${entry%=*}
  forward "${target%:*}" "${target##*:}" "${entry##*=}"
done

# 3 and 4 need the node's identity. node-identity opens the store exactly as the node does (the remote
# store and the sealed storage key included), so it prints the identity the node will run with.
mkdir -p "$ENCLAVE_RUN_DIR"
chown node:node "$ENCLAVE_RUN_DIR"
chmod 0700 "$ENCLAVE_RUN_DIR"
identity=$ENCLAVE_RUN_DIR/identity.json
# 3. Created at the first start exactly as the node creates it; public.
as_node node dist/node/identity-cli.js > "$identity"
log "identity $(cat "$identity")"

# 4. Made fresh each time (the NSM dates its document) and sent to the parent, which keeps the last
#    one (README: socat VSOCK-LISTEN:7401 ...). Public: the node's public keys and its attestation.
publish() {
  enrolment=$ENCLAVE_RUN_DIR/enrolment.json
  while :; do
    if as_node node dist/tee/attest-cli.js --identity "$identity" --organization "$owner" --provider nsm --nsm-command "$ENCLAVE_NSM_COMMAND" > "$enrolment.tmp"; then
      mv "$enrolment.tmp" "$enrolment"
      if as_node socat -u "OPEN:$enrolment" "VSOCK-CONNECT:$ENCLAVE_PARENT_CID:$ENCLAVE_ENROLMENT_VSOCK_PORT,connect-timeout=5"; then
        log "enrolment sent to vsock $ENCLAVE_PARENT_CID:$ENCLAVE_ENROLMENT_VSOCK_PORT"
      else
        log "enrolment not sent: nothing listens on vsock $ENCLAVE_PARENT_CID:$ENCLAVE_ENROLMENT_VSOCK_PORT"
      fi
    else
      log "no enrolment: the attestation failed (see above)"
    fi
    sleep "$ENCLAVE_ENROLMENT_EVERY_S"
  done
}
publish &

# 5. The node: it dials the coordinator through its forwarder and opens no port.
exec setpriv --reuid=node --regid=node --init-groups --no-new-privs -- node dist/node/main.js
