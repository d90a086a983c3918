package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseStallTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  time.Duration
		err   bool
	}{
		{"", 0, false},
		{"90s", 90 * time.Second, false},
		{" 2m ", 2 * time.Minute, false},
		{"45", 45 * time.Second, false},
		{"200ms", 200 * time.Millisecond, false},
		{"0", -1, false},
		{"off", -1, false},
		{"OFF", -1, false},
		{"-1s", 0, true},
		{"soon", 0, true},
		{"-3", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseStallTimeout("INK_X", tt.value)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStallTimeout(%q) = %v, %v; want %v, error %v", tt.value, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "INK_X="+strings.TrimSpace(tt.value)+" is not a duration") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}

// TestStallGuard: headers that do not come and a body that goes silent are
// *StallError (never context.Canceled); a caller that is slow to read is
// not a stall; a server that keeps sending in time is never cut.
func TestStallGuard(t *testing.T) {
	t.Parallel()
	const limit = 100 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/silent":
			<-r.Context().Done()
		case "/stall":
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/slow":
			for i := 0; i < 6; i++ {
				io.WriteString(w, "x")
				w.(http.Flusher).Flush()
				time.Sleep(limit / 4)
			}
		}
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: StallGuard(nil, limit, limit)}
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+path, nil)
		return client.Do(req)
	}

	_, err := get("/silent")
	var stall *StallError
	if !errors.As(err, &stall) || !stall.Headers || stall.After != limit || errors.Is(err, context.Canceled) {
		t.Errorf("silent server: %v", err)
	}

	res, err := get("/stall")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "first" || !errors.As(err, &stall) || stall.Headers || errors.Is(err, context.Canceled) {
		t.Errorf("stalled body: read %q, %v", body, err)
	}
	if !strings.Contains(err.Error(), "the response stream sent nothing for 100ms (INK_STREAM_IDLE_TIMEOUT sets this limit)") {
		t.Errorf("message %q", err)
	}

	res, err = get("/slow")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * limit) // the caller dawdles; the server is not to blame
	body, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(body) != "xxxxxx" {
		t.Errorf("slow but alive server: read %q, %v", body, err)
	}

	unguarded := &http.Client{Transport: StallGuard(nil, -1, 0)}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/slow", nil)
	if res, err := unguarded.Do(req); err != nil {
		t.Errorf("no limits: %v", err)
	} else {
		res.Body.Close()
	}
}

// TestNewTransportErrorStall: a stall before any reply is transient and
// retryable; after part of the reply it is a stream cut.
func TestNewTransportErrorStall(t *testing.T) {
	t.Parallel()
	err := &StallError{Headers: true, After: time.Minute}
	pe := NewTransportError("ollama", err, false)
	if pe.Kind != KindTransient || !Retryable(pe) || pe.Reason != "no response headers for 1m0s" || !strings.HasPrefix(pe.Message, "ollama: no response headers within 1m0s") {
		t.Errorf("before content: %+v", pe)
	}
	pe = NewTransportError("ollama", &StallError{After: time.Minute}, true)
	if pe.Kind != KindStreamCut || !strings.Contains(pe.Message, "the reply is partial") {
		t.Errorf("after content: %+v", pe)
	}
}
