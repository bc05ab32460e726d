#!/usr/bin/env bash
# Makes the throw-away certificates the security tests use, with the openssl command line (EC P-256 keys):
#   ca.{crt,key}              the CA lawnd trusts for clients and clients trust for lawnd
#   server.{crt,key}          lawnd's certificate, signed by ca, for 127.0.0.1 and localhost
#   client.{crt,key}          a client certificate signed by ca, CN=billing-client (SAN DNS:billing-client)
#   other-ca.{crt,key}        an unrelated CA
#   other-server.{crt,key}    a server certificate for 127.0.0.1 signed by other-ca (rotation tests)
#   other-client.{crt,key}    a client certificate signed by other-ca, CN=billing-client
#   expired-server.{crt,key}  a server certificate signed by ca that expired yesterday
#
#   usage: make_certs.sh DIR     (DIR is created; existing files in it are overwritten)
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 2 -subj "/CN=$1" 2>/dev/null
}
# leaf NAME CA CN SAN DAYS
leaf() {
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" -days "$5" \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca
ca other-ca
leaf server ca lawnd "IP:127.0.0.1,DNS:localhost" 2
leaf client ca billing-client "DNS:billing-client" 2
leaf other-server other-ca lawnd "IP:127.0.0.1,DNS:localhost" 2
leaf other-client other-ca billing-client "DNS:billing-client" 2
leaf expired-server ca lawnd "IP:127.0.0.1,DNS:localhost" -1
chmod 600 ./*.key
