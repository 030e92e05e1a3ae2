package broker

// BROKER_LOGGER resources (KIP-412): the log level, described by
// DescribeConfigs (describeconfigs.go) and changed by
// IncrementalAlterConfigs as Kafka's RuntimeLoggerManager changes log4j's.
// Strait has one logger, Kafka's "root": any other name does not exist.
// Legacy AlterConfigs does not take BROKER_LOGGER, as in Kafka.

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const rootLogger = "root"

// validLogLevels are log4j's, sorted as Kafka lists them in its message.
var validLogLevels = []string{"ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"}

// slogLevels maps log4j's levels onto slog's: TRACE and ALL log everything
// (below DEBUG), FATAL and OFF nothing but what is above ERROR (Strait logs
// nothing there, so both silence it).
var slogLevels = map[string]slog.Level{
	"ALL": slog.LevelDebug - 4, "TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4, "OFF": slog.LevelError + 8,
}

// alterBrokerLoggers validates every operation first, then applies them, as
// RuntimeLoggerManager.applyChangesForResource does.
func (s *Server) alterBrokerLoggers(r alterResource, validateOnly bool) error {
	id, err := strconv.ParseInt(r.name, 10, 32)
	if err != nil {
		return requestError("Node id must be an integer, but it is: " + r.name)
	}
	if int32(id) != s.cfg.NodeID {
		return requestError("Unexpected node id. Expected " + strconv.Itoa(int(s.cfg.NodeID)) + ", but received " + r.name)
	}
	for _, op := range r.ops {
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.name != rootLogger {
				return configError("Logger " + op.name + " does not exist!")
			}
			if _, ok := slogLevels[*op.value]; !ok {
				return configError("Cannot set the log level of " + op.name + " to " + *op.value +
					" as it is not a supported log level. Valid log levels are " + strings.Join(validLogLevels, ", "))
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.name != rootLogger {
				return configError("Logger " + op.name + " does not exist!")
			}
			return requestError("Removing the log level of the " + rootLogger + " logger is not allowed")
		case kmsg.IncrementalAlterConfigOpAppend:
			return requestError("APPEND operation is not allowed for the BROKER_LOGGER resource")
		case kmsg.IncrementalAlterConfigOpSubtract:
			return requestError("SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
		default:
			return requestError("Unknown operation type " + strconv.Itoa(int(op.op)) + " is not allowed for the BROKER_LOGGER resource")
		}
	}
	if validateOnly || len(r.ops) == 0 {
		return nil
	}
	if s.cfg.LogLevel == nil {
		return requestError("The log level of this broker cannot be changed: its embedder gave it a fixed logger")
	}
	for _, op := range r.ops {
		s.cfg.LogLevel.Set(slogLevels[*op.value])
		// At WARN, as Kafka logs it, so that the line shows at any level
		// but the ones that silence WARN.
		s.logger.Warn("updated the log level", "logger", op.name, "level", *op.value)
	}
	return nil
}

// logLevelName is the level the broker logs at, by log4j's name.
func logLevelName(s *Server) string {
	if s.cfg.LogLevel != nil {
		l := s.cfg.LogLevel.Level()
		switch {
		case l < slog.LevelDebug:
			return "TRACE"
		case l < slog.LevelInfo:
			return "DEBUG"
		case l < slog.LevelWarn:
			return "INFO"
		case l < slog.LevelError:
			return "WARN"
		case l <= slog.LevelError:
			return "ERROR"
		case l <= slog.LevelError+4:
			return "FATAL"
		}
		return "OFF"
	}
	return loggerLevelName(s.logger)
}
