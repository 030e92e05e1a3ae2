package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AppendError is a rejected or failed append. It unwraps to the *kerr.Error
// whose Code goes into the produce response, so errors.As(err, &kerrErr)
// works on every error storage returns. Message is the response's
// error_message; RecordErrors are its record_errors (Produce v8+), filled
// for per-record validation failures as Kafka's RecordValidationException.
type AppendError struct {
	Err          *kerr.Error
	Message      string
	RecordErrors []RecordError
}

// RecordError names one rejected record by its index in the batch.
type RecordError struct {
	BatchIndex int32
	Message    string
}

func (e *AppendError) Error() string { return e.Err.Message + ": " + e.Message }
func (e *AppendError) Unwrap() error { return e.Err }

func appendErrorf(code *kerr.Error, format string, args ...any) *AppendError {
	return &AppendError{Err: code, Message: fmt.Sprintf(format, args...)}
}

func invalidRecordf(format string, args ...any) *AppendError {
	return appendErrorf(kerr.InvalidRecord, format, args...)
}

func corruptMessagef(format string, args ...any) *AppendError {
	return appendErrorf(kerr.CorruptMessage, format, args...)
}

// storageError wraps a disk error as KAFKA_STORAGE_ERROR, keeping the cause.
type storageError struct {
	op  string
	err error
}

func (e *storageError) Error() string {
	return kerr.KafkaStorageError.Message + ": " + e.op + ": " + e.err.Error()
}

// Unwrap exposes both the kerr code and the underlying cause.
func (e *storageError) Unwrap() []error { return []error{kerr.KafkaStorageError, e.err} }

func storageErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *storageError
	if errors.As(err, &se) {
		return err
	}
	return &storageError{op: op, err: err}
}

// errLogClosed is returned by operations on a closed or deleted log.
var errLogClosed = storageErr("log", errors.New("log is closed"))
