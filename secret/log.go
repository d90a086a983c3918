package secret

import (
	"context"
	"log/slog"
)

// LogHandler wraps h so that the message and every string attribute of a
// record have r's secrets redacted before h sees them. A nil or empty r
// returns h itself. The handler is safe for concurrent use when h is.
func LogHandler(h slog.Handler, r *Redactor) slog.Handler {
	if r.Empty() {
		return h
	}
	return &logHandler{h: h, r: r}
}

type logHandler struct {
	h slog.Handler
	r *Redactor
}

var _ slog.Handler = (*logHandler)(nil)

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	msg, _ := l.r.Redact(rec.Message)
	out := slog.NewRecord(rec.Time, rec.Level, msg, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l *logHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		s, _ := l.r.Redact(v.String())
		return slog.String(a.Key, s)
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = l.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			s, _ := l.r.Redact(err.Error())
			return slog.String(a.Key, s)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = l.attr(a)
	}
	return &logHandler{h: l.h.WithAttrs(out), r: l.r}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h.WithGroup(name), r: l.r}
}
