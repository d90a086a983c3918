package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// captured decodes the JSON records written by a slog JSON handler.
func captured(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		recs = append(recs, m)
	}
	return recs
}

func newCapture(level slog.Level) (*bytes.Buffer, *slogHCLog) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})
	return &buf, newSlogHCLog(slog.New(h))
}

func TestHCLogLevelsMapToSlog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level hclog.Level
		want  string
	}{
		{hclog.Trace, "DEBUG-4"},
		{hclog.Debug, "DEBUG"},
		{hclog.Info, "INFO"},
		{hclog.Warn, "WARN"},
		{hclog.Error, "ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			t.Parallel()
			buf, l := newCapture(levelTrace)
			l.Log(tt.level, "plugin started", "pid", 42)
			recs := captured(t, buf)
			if len(recs) != 1 || recs[0]["level"] != tt.want || recs[0]["msg"] != "plugin started" || recs[0]["pid"] != float64(42) {
				t.Fatalf("logged %v, want one %s record with pid 42", recs, tt.want)
			}
		})
	}
}

func TestHCLogLevelFiltering(t *testing.T) {
	t.Parallel()
	buf, l := newCapture(slog.LevelInfo)
	if l.IsDebug() || l.IsTrace() || !l.IsInfo() || !l.IsError() {
		t.Errorf("IsTrace/IsDebug/IsInfo/IsError = %v/%v/%v/%v for an info logger",
			l.IsTrace(), l.IsDebug(), l.IsInfo(), l.IsError())
	}
	if got := l.GetLevel(); got != hclog.Info {
		t.Errorf("GetLevel = %v, want info", got)
	}
	l.Debug("hidden")
	l.SetLevel(hclog.Warn)
	l.Info("hidden too")
	l.Warn("shown")
	recs := captured(t, buf)
	if len(recs) != 1 || recs[0]["msg"] != "shown" {
		t.Fatalf("logged %v, want only the warning", recs)
	}
	l.SetLevel(hclog.Off)
	if l.GetLevel() != hclog.Off || l.IsError() {
		t.Error("a logger set to Off still reports a level")
	}
	if newSlogHCLog(nil).IsError() {
		t.Error("a nil slog logger should discard everything")
	}
}

func TestHCLogNamedWithAndOddArgs(t *testing.T) {
	t.Parallel()
	buf, l := newCapture(slog.LevelDebug)
	sub := l.Named("plugin").Named("stdio").With("worker", 7)
	if sub.Name() != "plugin.stdio" {
		t.Errorf("Name = %q, want plugin.stdio", sub.Name())
	}
	if got := sub.ImpliedArgs(); len(got) != 2 || got[0] != "worker" || got[1] != 7 {
		t.Errorf("ImpliedArgs = %v", got)
	}
	args := []any{"err", errors.New("boom"), "dangling"}
	sub.Error("read failed", args...)
	if args[2] != "dangling" || len(args) != 3 {
		t.Errorf("the caller's args were modified: %v", args)
	}
	recs := captured(t, buf)
	if len(recs) != 1 {
		t.Fatalf("logged %v", recs)
	}
	r := recs[0]
	if r["logger"] != "plugin.stdio" || r["worker"] != float64(7) || r["err"] != "boom" || r["EXTRA_VALUE_AT_END"] != "dangling" {
		t.Errorf("record = %v", r)
	}
	if l.ResetNamed("x").Name() != "x" {
		t.Error("ResetNamed did not replace the name")
	}
}

func TestHCLogStandardWriterLogsLines(t *testing.T) {
	t.Parallel()
	buf, l := newCapture(slog.LevelDebug)
	w := l.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn})
	_, _ = w.Write([]byte("first line\nsecond "))
	_, _ = w.Write([]byte("line\r\n\nthird"))
	w.(*lineLogWriter).Flush()
	l.StandardLogger(nil).Print("from the standard logger")

	var got []string
	for _, r := range captured(t, buf) {
		got = append(got, r["level"].(string)+" "+r["msg"].(string))
	}
	want := []string{"WARN first line", "WARN second line", "WARN third", "INFO from the standard logger"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("logged %q, want %q", got, want)
	}
}

func TestLineLogWriterBoundsAPendingLine(t *testing.T) {
	t.Parallel()
	var lines []string
	w := &lineLogWriter{log: func(s string) { lines = append(lines, s) }}
	_, _ = w.Write(bytes.Repeat([]byte("x"), maxPendingLine+1))
	if len(lines) != 1 || len(lines[0]) != maxPendingLine+1 || len(w.pending) != 0 {
		t.Fatalf("an overlong unterminated line was kept instead of logged (%d lines)", len(lines))
	}
}

// TestHCLogEndOnPurposeDemotesPluginWarnings: once the host ends a worker
// on purpose, go-plugin's warnings and errors about its death are logged at
// debug level, while what the worker itself writes keeps its level.
func TestHCLogEndOnPurposeDemotesPluginWarnings(t *testing.T) {
	t.Parallel()
	buf, l := newCapture(slog.LevelDebug)
	named := l.Named("stdio")
	stderr := l.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn})
	l.Error("plugin process exited", "error", "signal: killed")
	l.endOnPurpose()
	l.Error("plugin process exited", "error", "signal: killed")
	named.Warn("stdio service not available")
	l.Info("plugin exited")
	_, _ = stderr.Write([]byte("worker: panic\n"))

	var got []string
	for _, r := range captured(t, buf) {
		got = append(got, r["level"].(string)+" "+r["msg"].(string))
	}
	want := []string{"ERROR plugin process exited", "DEBUG plugin process exited", "DEBUG stdio service not available", "INFO plugin exited", "WARN worker: panic"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("logged %q, want %q", got, want)
	}
}
