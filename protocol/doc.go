// Package protocol owns Strait's side of the Kafka wire protocol that kmsg
// does not: size-prefixed framing, request headers (v0-v2, with tagged
// fields), response headers (v0 and v1), the table of API versions the broker
// serves and the ApiVersions answer generated from it, and the Fetch
// response, which is laid out here as chunks so that record sets can be sent
// from files with sendfile.
//
// Request and response bodies are decoded and encoded by
// github.com/twmb/franz-go/pkg/kmsg, and the headers and the Fetch layout
// with its primitives, github.com/twmb/franz-go/pkg/kbin; wire.go holds the
// little kbin lacks.
//
// Behaviour follows Apache Kafka 4.x (SocketServer, RequestHeader,
// RequestContext, ApiVersionsRequest/Response):
//
//   - a frame whose size is negative or above socket.request.max.bytes is an
//     error and the connection is closed;
//   - an unknown API key, a version outside the served range, or a header or
//     body that does not decode is an error and the connection is closed;
//   - except for ApiVersions: an unsupported ApiVersions version is answered,
//     at v0, with UNSUPPORTED_VERSION and the ApiVersions range (KIP-511);
//   - bytes after a decoded body are ignored, as Kafka ignores them.
package protocol
