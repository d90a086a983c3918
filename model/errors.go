package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrorKind classifies a failed model request so that callers (the retry
// policy, the worker recording an attempt's outcome) can branch on it.
type ErrorKind int

// The kinds of provider failure.
const (
	// KindOther is a failure that retrying will not fix (a bad request, an
	// unknown model, a malformed reply).
	KindOther ErrorKind = iota
	// KindTransient is worth retrying: 408, 409, 429, 5xx, 529 overloaded, a
	// reset connection or an error event sent by the server mid-stream.
	KindTransient
	// KindAuth is a missing or rejected API key (401, 403).
	KindAuth
	// KindContextLength means the conversation no longer fits the model's
	// context window.
	KindContextLength
	// KindStreamCut means the response stream ended before the provider said
	// it was complete; the message returned beside it is partial.
	KindStreamCut
	// KindCanceled means the caller's context ended the request.
	KindCanceled
)

// String names the kind for logs.
func (k ErrorKind) String() string {
	switch k {
	case KindTransient:
		return "transient"
	case KindAuth:
		return "auth"
	case KindContextLength:
		return "context-length"
	case KindStreamCut:
		return "stream-cut"
	case KindCanceled:
		return "canceled"
	}
	return "other"
}

// ProviderError is a failed model request, classified. Its Error text is
// meant for the user as it is: it names the provider, says what went wrong
// and, where there is one, how to fix it. It is plain data and safe to copy.
type ProviderError struct {
	// Provider is the binding's provider name ("anthropic", "ollama", …).
	Provider string
	Kind     ErrorKind
	// Status is the HTTP status, 0 when the request never got one (a reset
	// connection) or the failure came inside a 200 stream.
	Status int
	// RetryAfter is the wait the server asked for (Retry-After,
	// retry-after-ms), 0 when it asked for none.
	RetryAfter time.Duration
	// Reason is a short summary for retry notices, e.g. "429 rate limited".
	Reason string
	// Message is the full user-facing text returned by Error.
	Message string
	// Err is the underlying SDK or transport error, if any.
	Err error
}

// Error returns the user-facing message.
func (e *ProviderError) Error() string { return e.Message }

// Unwrap returns the underlying error so errors.Is(err, context.Canceled)
// and friends keep working.
func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether err is a *ProviderError that a retry may fix.
func Retryable(err error) bool {
	var pe *ProviderError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Kind == KindTransient || pe.Kind == KindStreamCut
}

// HTTPFailure describes an error response from a provider's HTTP API; the
// adapters fill it from their SDK's error type.
type HTTPFailure struct {
	Provider string
	// KeyVar is the environment variable that holds the provider's key
	// ("ANTHROPIC_API_KEY"); "" for servers that take none.
	KeyVar string
	Model  string
	Status int
	Header http.Header
	// Type and Code are the provider's machine-readable error type and code
	// ("overloaded_error", "context_length_exceeded"), if any.
	Type string
	Code string
	// Message is the provider's human-readable message, if any.
	Message string
	Err     error
}

// NewHTTPError classifies an HTTP error response and writes its user-facing
// message.
func NewHTTPError(f HTTPFailure, now time.Time) *ProviderError {
	pe := &ProviderError{
		Provider:   f.Provider,
		Status:     f.Status,
		RetryAfter: ParseRetryAfter(f.Header, now),
		Err:        f.Err,
	}
	said := strings.TrimSpace(f.Message)
	if said == "" {
		said = strings.TrimSpace(f.Type + " " + f.Code)
	}
	if said == "" {
		said = http.StatusText(f.Status)
	}
	status := strconv.Itoa(f.Status)
	switch {
	case f.Status != http.StatusTooManyRequests && f.Status < 500 && IsContextLengthMessage(f.Code+" "+f.Type+" "+f.Message):
		// Rate limits and server errors speak of tokens too; only a
		// refused request is a context overflow.
		pe.Kind = KindContextLength
		pe.Reason = "context too long"
		pe.Message = fmt.Sprintf("%s: the conversation is longer than the model's context window (%d): %s", f.Provider, f.Status, said)
	case f.Status == http.StatusUnauthorized:
		pe.Kind = KindAuth
		pe.Reason = "401 unauthorized"
		if f.KeyVar != "" {
			pe.Message = fmt.Sprintf("%s: the API key was rejected (401): set %s to a valid key (%s)", f.Provider, f.KeyVar, said)
		} else {
			pe.Message = fmt.Sprintf("%s: the server asked for credentials (401): %s", f.Provider, said)
		}
	case f.Status == http.StatusForbidden:
		pe.Kind = KindAuth
		pe.Reason = "403 forbidden"
		hint := "check the key's permissions for this model"
		if f.KeyVar != "" {
			hint += " or set " + f.KeyVar + " to another key"
		}
		pe.Message = fmt.Sprintf("%s: the API key is not allowed to do this (403): %s; %s", f.Provider, said, hint)
	case f.Status == http.StatusTooManyRequests:
		pe.Kind = KindTransient
		pe.Reason = "429 rate limited"
	case f.Status == 529 || f.Type == "overloaded_error":
		pe.Kind = KindTransient
		pe.Reason = status + " overloaded"
	case f.Status == http.StatusRequestTimeout || f.Status == http.StatusConflict:
		pe.Kind = KindTransient
		pe.Reason = status + " " + strings.ToLower(http.StatusText(f.Status))
	case f.Status >= 500:
		pe.Kind = KindTransient
		pe.Reason = status + " server error"
	case f.Status == http.StatusNotFound:
		pe.Kind = KindOther
		pe.Reason = "404 not found"
		pe.Message = fmt.Sprintf("%s: not found (404): %s; check the model name %q and the base URL", f.Provider, said, f.Model)
	default:
		pe.Kind = KindOther
		pe.Reason = status + " " + strings.ToLower(http.StatusText(f.Status))
	}
	if pe.Message == "" {
		pe.Message = fmt.Sprintf("%s: %s: %s", f.Provider, pe.Reason, said)
	}
	return pe
}

// NewTransportError classifies an error that is not an HTTP error response:
// a cancelled context, a reset or refused connection, a stream that broke,
// a request or stream that stalled (*StallError: transient, or a stream
// cut once part of the reply arrived).
// contentSeen says whether any part of the reply had arrived; a break after
// that is a stream cut, before it a transient failure.
func NewTransportError(provider string, err error, contentSeen bool) *ProviderError {
	pe := &ProviderError{Provider: provider, Err: err}
	var stall *StallError
	var tooLarge *ReplyTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return NewReplyTooLargeError(provider, tooLarge)
	case errors.As(err, &stall) && contentSeen:
		pe.Kind = KindStreamCut
		pe.Reason = "stream stalled"
		pe.Message = fmt.Sprintf("%s: %s; the reply is partial and its usage incomplete", provider, stall)
	case errors.As(err, &stall):
		pe.Kind = KindTransient
		pe.Reason = "stalled"
		if stall.Headers {
			pe.Reason = "no response headers"
		}
		pe.Reason += " for " + stall.After.String()
		pe.Message = fmt.Sprintf("%s: %s", provider, stall)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		pe.Kind = KindCanceled
		pe.Reason = "canceled"
		pe.Message = fmt.Sprintf("%s: request stopped: %v", provider, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		pe.Kind = KindOther
		pe.Reason = "connection refused"
		pe.Message = fmt.Sprintf("%s: could not connect (connection refused): %v; is the server running and the base URL right?", provider, err)
	case contentSeen:
		pe.Kind = KindStreamCut
		pe.Reason = "stream cut"
		pe.Message = fmt.Sprintf("%s: the response stream was cut before it finished (%v); the reply is partial and its usage incomplete", provider, err)
	default:
		pe.Kind = KindTransient
		pe.Reason = transportReason(err)
		pe.Message = fmt.Sprintf("%s: %s: %v", provider, pe.Reason, err)
	}
	return pe
}

func transportReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "connection closed early"
	case errors.As(err, &ne) && ne.Timeout():
		return "network timeout"
	}
	return "network error"
}

// NewStreamCutError reports a stream that ended (without a transport error)
// before the provider said the reply was complete.
func NewStreamCutError(provider string, contentSeen bool) *ProviderError {
	if !contentSeen {
		return &ProviderError{
			Provider: provider, Kind: KindTransient, Reason: "stream ended before any reply",
			Message: provider + ": the response stream ended before any reply arrived",
		}
	}
	return &ProviderError{
		Provider: provider, Kind: KindStreamCut, Reason: "stream cut",
		Message: provider + ": the response stream was cut before it finished; the reply is partial and its usage incomplete",
	}
}

// IsContextOverflow reports whether err is a provider's refusal of a
// request that does not fit the model's context window (KindContextLength).
// Such a request is not worth retrying as it is; compacting the history is
// the way on.
func IsContextOverflow(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Kind == KindContextLength
}

// IsContextLengthMessage reports whether a provider's error text says the
// prompt exceeds the model's context window. Providers word this
// differently; the phrases below cover Anthropic, OpenAI, DeepSeek, vLLM,
// Ollama and OpenRouter.
func IsContextLengthMessage(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{
		"context_length_exceeded",
		"prompt is too long",
		"maximum context length",
		"context window",
		"context length",
		"input is too long",
		"too many tokens",
		"exceeds the context",
		"reduce the length of the messages",
		"context limit",
	} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// ParseRetryAfter reads the wait a server asked for: retry-after-ms
// (milliseconds), else Retry-After as seconds or an HTTP date. It returns 0
// when there is none or it cannot be read.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
