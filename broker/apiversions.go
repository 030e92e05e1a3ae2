package broker

// ApiVersions: every registered API (handlers.go) with its served versions;
// the protocol package encodes the answer, including the v0 fallback for an
// ApiVersions version the broker does not serve (KIP-511) and the features
// (protocol.Kafka44Features), and from v5 (KIP-1242) the check of the
// cluster id and node id the client believes it reached: REBOOTSTRAP_REQUIRED
// when they are not this broker's. Versions: see the registration below.
//
// Every connection opens with one, so the frames are encoded once per
// version (protocol.ApiVersionsFrames).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.ApiVersions, 0, 5, handleApiVersions) }

func handleApiVersions(c *conn, x *exchange) {
	buf := frames.Get().(*[]byte)
	x.frame = c.srv.apiVersions.AppendResponse((*buf)[:0], x.req)
	x.pooled = buf
	x.c.complete(x, true)
}
