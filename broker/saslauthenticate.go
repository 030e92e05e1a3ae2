package broker

// SaslAuthenticate: on a SASL listener, during authentication, the
// connection's authenticator steps the mechanism with it (conn_auth.go).
// What reaches this handler came after authentication completed (or on a
// listener without SASL): ILLEGAL_SASL_STATE, as Kafka's KafkaApis.
// Versions: 0-2, as Kafka 4 (v1 adds the session lifetime, KIP-368).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLAuthenticate, 0, 2, handleSaslAuthenticate) }

func handleSaslAuthenticate(c *conn, x *exchange) {
	resp := x.req.Body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	x.respond(resp)
}
