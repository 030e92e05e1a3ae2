package broker

// SaslHandshake: on a SASL listener, before authentication (or to begin a
// KIP-368 re-authentication), the connection's authenticator answers it
// (conn_auth.go). What reaches this handler is a SaslHandshake Kafka's
// KafkaApis would see: on a listener without SASL, or on an authenticated
// connection that cannot re-authenticate now; it is ILLEGAL_SASL_STATE.
// Versions: 0-1, as Kafka 4 (v0: the tokens follow as bare frames; v1:
// in SaslAuthenticate requests).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLHandshake, 0, 1, handleSaslHandshake) }

func handleSaslHandshake(c *conn, x *exchange) {
	resp := x.req.Body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	x.respond(resp)
}
