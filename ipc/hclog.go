package ipc

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// levelTrace is the slog level that hclog's Trace maps to.
const levelTrace = slog.LevelDebug - 4

// slogHCLog makes an *slog.Logger usable where go-plugin wants an
// hclog.Logger, so that go-plugin's own logs and the worker's stderr lines
// relayed by the host end up in ink's logs. It is safe for concurrent use.
type slogHCLog struct {
	logger *slog.Logger
	name   string
	// implied holds the key/value pairs added by With, for ImpliedArgs.
	implied []any
	// level is an extra floor set through SetLevel, shared with loggers
	// derived by With and Named as hclog's own loggers do.
	level *atomic.Int32
	// ending is set once the host ends the worker on purpose (a pooled
	// worker it no longer needs, a start it gave up): go-plugin's warnings
	// and errors about the process going away are then expected and are
	// written at debug level, so that a warning in a log always means
	// something went wrong. Shared with derived loggers.
	ending *atomic.Bool
}

var _ hclog.Logger = (*slogHCLog)(nil)

// newSlogHCLog returns an hclog.Logger that writes to logger. A nil logger
// discards everything.
func newSlogHCLog(logger *slog.Logger) *slogHCLog {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	level := new(atomic.Int32)
	level.Store(int32(hclog.NoLevel))
	return &slogHCLog{logger: logger, level: level, ending: new(atomic.Bool)}
}

// endOnPurpose marks the worker as ended by the host on purpose; see
// slogHCLog.ending.
func (l *slogHCLog) endOnPurpose() { l.ending.Store(true) }

// slogLevel maps an hclog level to the slog level it is written at.
func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// enabled reports whether a message at level would be written.
func (l *slogHCLog) enabled(level hclog.Level) bool {
	if level == hclog.Off {
		return false
	}
	floor := hclog.Level(l.level.Load())
	if floor == hclog.Off {
		return false
	}
	if floor != hclog.NoLevel && level < floor {
		return false
	}
	return l.logger.Enabled(context.Background(), slogLevel(level))
}

// Log writes msg with its key/value pairs at level, or at debug level if
// it is a warning or an error about a worker the host ends on purpose.
func (l *slogHCLog) Log(level hclog.Level, msg string, args ...any) {
	if level > hclog.Info && level != hclog.Off && l.ending.Load() {
		level = hclog.Debug
	}
	l.write(level, msg, args...)
}

// write writes msg with its key/value pairs at level.
func (l *slogHCLog) write(level hclog.Level, msg string, args ...any) {
	if !l.enabled(level) {
		return
	}
	if l.name != "" {
		args = append([]any{"logger", l.name}, args...)
	}
	l.logger.Log(context.Background(), slogLevel(level), msg, normalizeArgs(args)...)
}

// normalizeArgs turns hclog's loose key/value list into one slog accepts:
// an odd trailing value is kept under "EXTRA_VALUE_AT_END" as hclog does.
// The caller's slice is never modified.
func normalizeArgs(in []any) []any {
	args := make([]any, 0, len(in)+1)
	args = append(args, in...)
	if len(args)%2 == 1 {
		last := args[len(args)-1]
		args = append(args[:len(args)-1], "EXTRA_VALUE_AT_END", last)
	}
	for i := 0; i < len(args); i += 2 {
		if _, ok := args[i].(string); !ok {
			if s, ok := args[i].(interface{ String() string }); ok {
				args[i] = s.String()
			}
		}
	}
	return args
}

// Trace logs at trace level.
func (l *slogHCLog) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }

// Debug logs at debug level.
func (l *slogHCLog) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }

// Info logs at info level.
func (l *slogHCLog) Info(msg string, args ...any) { l.Log(hclog.Info, msg, args...) }

// Warn logs at warn level.
func (l *slogHCLog) Warn(msg string, args ...any) { l.Log(hclog.Warn, msg, args...) }

// Error logs at error level.
func (l *slogHCLog) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// IsTrace reports whether trace messages are written.
func (l *slogHCLog) IsTrace() bool { return l.enabled(hclog.Trace) }

// IsDebug reports whether debug messages are written.
func (l *slogHCLog) IsDebug() bool { return l.enabled(hclog.Debug) }

// IsInfo reports whether info messages are written.
func (l *slogHCLog) IsInfo() bool { return l.enabled(hclog.Info) }

// IsWarn reports whether warnings are written.
func (l *slogHCLog) IsWarn() bool { return l.enabled(hclog.Warn) }

// IsError reports whether errors are written.
func (l *slogHCLog) IsError() bool { return l.enabled(hclog.Error) }

// ImpliedArgs returns the key/value pairs added with With.
func (l *slogHCLog) ImpliedArgs() []any { return append([]any(nil), l.implied...) }

// With returns a logger that adds args to every message.
func (l *slogHCLog) With(args ...any) hclog.Logger {
	args = normalizeArgs(args)
	return &slogHCLog{
		logger:  l.logger.With(args...),
		name:    l.name,
		implied: append(append([]any(nil), l.implied...), args...),
		level:   l.level,
		ending:  l.ending,
	}
}

// Name returns the logger's name ("" when unnamed).
func (l *slogHCLog) Name() string { return l.name }

// Named returns a logger whose name is this one's with name appended.
func (l *slogHCLog) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

// ResetNamed returns a logger named name.
func (l *slogHCLog) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

// SetLevel sets a floor below which messages are dropped, on this logger
// and every logger derived from it.
func (l *slogHCLog) SetLevel(level hclog.Level) { l.level.Store(int32(level)) }

// GetLevel returns the lowest level that is written, or Off.
func (l *slogHCLog) GetLevel() hclog.Level {
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if l.enabled(level) {
			return level
		}
	}
	return hclog.Off
}

// StandardLogger returns a standard library logger writing through l.
func (l *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line written to it at
// info level, or at opts.ForceLevel when set.
func (l *slogHCLog) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	// What the worker itself writes is never demoted.
	return &lineLogWriter{log: func(line string) { l.write(level, line) }}
}

// lineLogWriter splits what is written to it into lines and logs each one.
// A trailing partial line is kept until its newline arrives or Flush is
// called. It is safe for concurrent use.
type lineLogWriter struct {
	log func(line string)

	mu      sync.Mutex
	pending []byte
}

// maxPendingLine bounds a line kept while waiting for its newline.
const maxPendingLine = 64 << 10

// Write logs every complete line in p. It never fails.
func (w *lineLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			break
		}
		w.emit(w.pending[:i])
		w.pending = w.pending[i+1:]
	}
	if len(w.pending) > maxPendingLine {
		w.emit(w.pending)
		w.pending = nil
	}
	if len(w.pending) == 0 {
		w.pending = nil
	}
	return len(p), nil
}

// Flush logs a trailing partial line, if any.
func (w *lineLogWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		w.emit(w.pending)
		w.pending = nil
	}
}

func (w *lineLogWriter) emit(line []byte) {
	s := strings.TrimRight(string(line), "\r")
	if s != "" {
		w.log(s)
	}
}
