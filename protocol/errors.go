package protocol

import "fmt"

// The errors ParseRequest returns. Kafka answers none of them: it logs and
// closes the connection (SocketServer turns each into an InvalidRequestException).
// The one request Kafka answers despite an unsupported version, ApiVersions,
// is not an error here; see Request.UnsupportedVersion.

// UnknownKeyError is a request whose API key kmsg does not know or the broker
// does not serve.
type UnknownKeyError struct {
	Key           int16
	Version       int16
	CorrelationID int32
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("unknown or disabled api key %d (version %d, correlation id %d)", e.Key, e.Version, e.CorrelationID)
}

// UnsupportedVersionError is a request for a served key at a version outside
// [MinAccepted, Max]; this includes Produce v0-2, which Kafka 4 advertises
// but refuses by closing the connection (KAFKA-18659).
type UnsupportedVersionError struct {
	Key           int16
	Version       int16
	CorrelationID int32
	Min, Max      int16 // the accepted range
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("api key %d version %d not enabled (accepted %d-%d, correlation id %d)",
		e.Key, e.Version, e.Min, e.Max, e.CorrelationID)
}

// MalformedRequestError is a request whose header or body does not decode.
// Key, Version and CorrelationID are filled as far as they were read.
type MalformedRequestError struct {
	Key           int16
	Version       int16
	CorrelationID int32
	Part          string // "header" or "body"
	Err           error
}

func (e *MalformedRequestError) Error() string {
	return fmt.Sprintf("malformed request %s (api key %d version %d, correlation id %d): %v",
		e.Part, e.Key, e.Version, e.CorrelationID, e.Err)
}

func (e *MalformedRequestError) Unwrap() error { return e.Err }
