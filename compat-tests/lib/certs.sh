# Shared by the secured compat suites: make_certs DIR writes, with the openssl
# CLI and Java's keytool, a test CA and the certificates signed by it:
#
#   ca.pem ca.key                  the CA (PEM)
#   broker.pem broker.key          the broker's (SAN IP:127.0.0.1, DNS:localhost;
#                                  serverAuth and clientAuth, as brokers are
#                                  each other's clients too)
#   broker.p12 broker.jks          the same key and chain as PKCS12 and JKS keystores
#   client.pem client.key          a client's (CN=client, clientAuth), for mTLS
#   client.p12 client.jks          the same as keystores
#   truststore.p12 truststore.jks  the CA alone, as trust stores
#
# Every store and key password is $CERTS_PASSWORD. Idempotent: a DIR that
# already holds a complete set is left as it is. It installs nothing: it
# fails with a clear message when openssl or keytool is missing.
CERTS_PASSWORD=strait-test-pass

make_certs() {
  local dir="${1:?usage: make_certs DIR}"
  local tool
  for tool in openssl keytool; do
    command -v "$tool" >/dev/null || { echo "make_certs: $tool is needed (openssl from Debian; keytool comes with Java 17)" >&2; return 1; }
  done
  [ -f "$dir/.complete" ] && return 0
  mkdir -p "$dir" || return 1
  local pw=$CERTS_PASSWORD
  (
    set -e
    cd "$dir"
    rm -f ./*.pem ./*.key ./*.p12 ./*.jks ./*.srl ./*.csr ./*.ext
    openssl req -x509 -new -newkey rsa:2048 -nodes -sha256 -days 3650 -keyout ca.key -out ca.pem \
      -subj "/CN=Strait Test CA" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    issue() { # name subject extensions
      openssl req -new -newkey rsa:2048 -nodes -sha256 -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
      # The keystores carry the chain up to the CA, as a broker's usually do.
      openssl pkcs12 -export -in "$1.pem" -inkey "$1.key" -certfile ca.pem -name "$1" \
        -out "$1.p12" -passout "pass:$pw"
      keytool -importkeystore -noprompt -srckeystore "$1.p12" -srcstoretype PKCS12 -srcstorepass "$pw" \
        -destkeystore "$1.jks" -deststoretype JKS -deststorepass "$pw" -destkeypass "$pw" >/dev/null 2>&1
      rm -f "$1.csr" "$1.ext"
    }
    issue broker "/CN=localhost/O=Strait Test" \
      "$(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE')"
    issue client "/CN=client/O=Strait Test" \
      "$(printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE')"
    for type in PKCS12 JKS; do
      ext=p12; [ $type = JKS ] && ext=jks
      keytool -importcert -noprompt -alias ca -file ca.pem -keystore "truststore.$ext" -storetype $type \
        -storepass "$pw" >/dev/null 2>&1
    done
    rm -f ca.srl
    openssl verify -CAfile ca.pem broker.pem client.pem >/dev/null
    touch .complete
  ) || { echo "make_certs: generating certificates into $dir failed" >&2; return 1; }
}
