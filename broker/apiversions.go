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
	if r, ok := x.req.Body.(*kmsg.ApiVersionsRequest); ok && r.ClientSoftwareName != "" {
		c.software.Store(&[2]string{truncate(r.ClientSoftwareName, 256), truncate(r.ClientSoftwareVersion, 256)})
	}
	buf := frames.Get().(*[]byte)
	x.frame = c.srv.apiVersionFrames().AppendResponse((*buf)[:0], x.req)
	x.pooled = buf
	x.c.complete(x, true)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
