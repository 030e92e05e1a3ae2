package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendResponse appends the whole response frame (size, header, body) to dst.
//
// The response is encoded at the version of req's body (the request version,
// or v0 for an unsupported ApiVersions request). The response header is v1
// (correlation id and an empty tagged-field section) for flexible versions and
// v0 (correlation id only) otherwise; ApiVersions always uses v0, because a
// client must read it before it knows which versions the broker speaks.
func AppendResponse(dst []byte, req *Request, resp kmsg.Response) []byte {
	resp.SetVersion(req.Body.GetVersion())
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled below
	dst = kbin.AppendInt32(dst, req.CorrelationID)
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		dst = append(dst, 0) // no header tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
