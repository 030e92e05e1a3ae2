package controller

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka API error with the message Kafka would send beside it.
// It unwraps to the *kerr.Error, so errors.As(err, &kerrErr) yields the code.
type Error struct {
	Err     *kerr.Error
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Err.Message
	}
	return e.Err.Message + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func apiError(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Err: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorMessage returns the message to put in a response's error message field
// for err: the controller's message, or the Kafka error's description when err
// is a bare *kerr.Error, or "" when err is nil.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var ce *Error
	if errors.As(err, &ce) && ce.Message != "" {
		return ce.Message
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Description
	}
	return err.Error()
}

// ErrNotStarted is returned by writes before Start succeeded or after Close.
var ErrNotStarted = errors.New("controller: not running")
