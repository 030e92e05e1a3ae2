package broker

// Helpers the API handlers share.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/coordinator/txn"
)

// requestContext bounds a request's wait on the controller by its timeout
// (none, or above a minute: 30 seconds).
func requestContext(timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := time.Duration(timeoutMillis) * time.Millisecond
	if d <= 0 || d > time.Minute {
		d = 30 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// clientID is the request's client id, null read as "", as Kafka does.
func clientID(x *exchange) string { return x.req.ClientIDString() }

// txnCoordinator returns the running transaction coordinator, nil before
// Start or after Close.
func (s *Server) txnCoordinator() *txn.Coordinator {
	if svc := s.txns(); svc != nil {
		return svc.coord
	}
	return nil
}

// fencedCode keeps PRODUCER_FENCED from clients too old to know it.
func fencedCode(code int16, version, firstWithFenced int16) int16 {
	if code == kerr.ProducerFenced.Code && version < firstWithFenced {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
