package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "3", "retry-after-ms": "1250"}, 1250 * time.Millisecond},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := ParseRetryAfter(h, now); got != tc.want {
				t.Errorf("ParseRetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

func TestNewHTTPError(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		name     string
		f        HTTPFailure
		kind     ErrorKind
		reason   string
		contains string
	}{
		{"401 names the key", HTTPFailure{Provider: "anthropic", KeyVar: "ANTHROPIC_API_KEY", Status: 401, Message: "invalid x-api-key"},
			KindAuth, "401 unauthorized", "anthropic: the API key was rejected (401): set ANTHROPIC_API_KEY to a valid key (invalid x-api-key)"},
		{"401 without a key variable", HTTPFailure{Provider: "ollama", Status: 401, Message: "unauthorized"},
			KindAuth, "401 unauthorized", "ollama: the server asked for credentials (401): unauthorized"},
		{"403", HTTPFailure{Provider: "openai", KeyVar: "OPENAI_API_KEY", Status: 403, Message: "project has no access"},
			KindAuth, "403 forbidden", "or set OPENAI_API_KEY to another key"},
		{"429", HTTPFailure{Provider: "openai", Status: 429, Message: "slow down"}, KindTransient, "429 rate limited", "openai: 429 rate limited: slow down"},
		{"529", HTTPFailure{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"}, KindTransient, "529 overloaded", "Overloaded"},
		{"503", HTTPFailure{Provider: "vllm", Status: 503}, KindTransient, "503 server error", "vllm: 503 server error: Service Unavailable"},
		{"context length by code", HTTPFailure{Provider: "openai", Status: 400, Code: "context_length_exceeded", Message: "too big"},
			KindContextLength, "context too long", "the conversation is longer than the model's context window"},
		{"context length by words", HTTPFailure{Provider: "anthropic", Status: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"},
			KindContextLength, "context too long", "210000 tokens"},
		{"context length with max_tokens", HTTPFailure{Provider: "anthropic", Status: 400, Type: "invalid_request_error",
			Message: "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"},
			KindContextLength, "context too long", "188240 + 21333"},
		{"context length from a compatible server", HTTPFailure{Provider: "vllm", Status: 400,
			Message: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens."},
			KindContextLength, "context too long", "32768"},
		{"rate limit that speaks of tokens", HTTPFailure{Provider: "openai", Status: 429, Message: "too many tokens per minute: the context length of your requests"},
			KindTransient, "429 rate limited", "too many tokens"},
		{"plain bad request", HTTPFailure{Provider: "openai", Status: 400, Message: "unknown parameter"}, KindOther, "400 bad request", "openai: 400 bad request: unknown parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pe := NewHTTPError(tc.f, now)
			if pe.Kind != tc.kind || pe.Reason != tc.reason || !strings.Contains(pe.Error(), tc.contains) {
				t.Errorf("got kind %v reason %q message %q; want %v %q containing %q", pe.Kind, pe.Reason, pe.Error(), tc.kind, tc.reason, tc.contains)
			}
			if Retryable(pe) != (tc.kind == KindTransient) {
				t.Errorf("Retryable = %v for kind %v", Retryable(pe), pe.Kind)
			}
		})
	}
}

func TestNewTransportError(t *testing.T) {
	t.Parallel()
	reset := fmt.Errorf("read tcp: %w", syscall.ECONNRESET)
	cases := []struct {
		name        string
		err         error
		contentSeen bool
		kind        ErrorKind
		reason      string
	}{
		{"cancel", fmt.Errorf("wrapped: %w", context.Canceled), true, KindCanceled, "canceled"},
		{"reset before content", reset, false, KindTransient, "connection reset"},
		{"reset after content", reset, true, KindStreamCut, "stream cut"},
		{"eof before content", io.ErrUnexpectedEOF, false, KindTransient, "connection closed early"},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), false, KindOther, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pe := NewTransportError("ollama", tc.err, tc.contentSeen)
			if pe.Kind != tc.kind || pe.Reason != tc.reason {
				t.Errorf("kind %v reason %q, want %v %q (%s)", pe.Kind, pe.Reason, tc.kind, tc.reason, pe)
			}
			if !errors.Is(pe, tc.err) {
				t.Errorf("the cause is not kept: %v", pe)
			}
			if !strings.HasPrefix(pe.Error(), "ollama: ") {
				t.Errorf("message %q does not name the provider", pe)
			}
		})
	}
}

func TestIsContextOverflow(t *testing.T) {
	t.Parallel()
	overflow := NewHTTPError(HTTPFailure{Provider: "openai", Status: 400, Code: "context_length_exceeded", Message: "too long"}, time.Now())
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"provider error", overflow, true},
		{"wrapped", fmt.Errorf("model turn 3: %w", overflow), true},
		{"other kind", NewHTTPError(HTTPFailure{Provider: "openai", Status: 400, Message: "unknown parameter"}, time.Now()), false},
		{"plain error with the words", errors.New("prompt is too long"), false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		if got := IsContextOverflow(tc.err); got != tc.want {
			t.Errorf("%s: IsContextOverflow = %v, want %v", tc.name, got, tc.want)
		}
	}
	if Retryable(overflow) {
		t.Error("a context overflow is retried as it is; it needs a compaction")
	}
}
