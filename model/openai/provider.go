// Package openai is ink's adapter for the OpenAI Chat Completions API
// ("openai/<model>") and every server that speaks it (DeepSeek, Ollama,
// vLLM, OpenRouter, a custom --base-url), built on the official openai-go
// SDK: streaming text, streamed tool calls assembled by index, reasoning
// text where a server sends it, and usage from the final chunk.
//
// A Provider makes exactly one HTTP attempt per Stream call (the SDK's own
// retries are off); package providers wraps it with ink's retry policy. A
// request that gets no response headers, or a stream that sends nothing,
// for the stall limit (60 s by default) ends with a transient
// *model.StallError instead of waiting silently.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/inkdev/ink/model"
)

// DefaultBaseURL is OpenAI's endpoint, /v1 included.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config says how to reach one Chat Completions server. The adapter never
// reads the process environment itself: the caller resolves key and
// endpoint.
type Config struct {
	// Name is the provider name used in messages ("openai", "ollama", …);
	// "" = "openai".
	Name string
	// APIKey is sent as a bearer token; "" sends none (local servers).
	APIKey string
	// KeyVar is the environment variable a rejected key is fixed by; it is
	// named in 401 errors. "" for servers without keys.
	KeyVar string
	// BaseURL is the endpoint including /v1 ("" = DefaultBaseURL).
	BaseURL string
	// Model is used when a request names none.
	Model string
	// LegacyMaxTokens sends a request's MaxTokens as max_tokens, which
	// compatible servers understand, instead of OpenAI's
	// max_completion_tokens.
	LegacyMaxTokens bool
	// ReasoningEffort sends a request's thinking level as reasoning_effort
	// to models that take it (OpenAI's o-series and gpt-5 family).
	ReasoningEffort bool
	// HTTPClient carries the requests (nil = a client with Go's default
	// transport and no overall timeout, since streams can be long). Its
	// transport is wrapped in model.StallGuard with the two limits below.
	HTTPClient *http.Client
	// ResponseHeaderTimeout bounds the wait for a response's headers and
	// StreamIdleTimeout the wait for each next byte of its body; passing
	// either is a transient *model.StallError, retried by the caller's
	// policy. 0 means model.DefaultStallTimeout; a negative value waits for
	// ever.
	ResponseHeaderTimeout, StreamIdleTimeout time.Duration
}

// Provider streams assistant turns from a Chat Completions server. It holds
// no per-request state and is safe for concurrent use; it owns nothing that
// needs closing.
type Provider struct {
	cfg         Config
	completions sdk.ChatCompletionService
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	hc := model.GuardedClient(cfg.HTTPClient, cfg.ResponseHeaderTimeout, cfg.StreamIdleTimeout)
	// The service is built from explicit options only, so no OPENAI_*
	// variable of the host (a key meant for OpenAI) leaks to another server.
	opts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Provider{cfg: cfg, completions: sdk.NewChatCompletionService(opts...)}
}

// Stream sends one request and assembles the streamed reply. See
// model.Provider for the contract; errors are *model.ProviderError.
func (p *Provider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	modelID := req.Model
	if modelID == "" {
		modelID = p.cfg.Model
	}
	out := model.Message{Role: model.RoleAssistant, Model: modelID, Usage: &model.Usage{Incomplete: true}}
	params, err := p.buildParams(req, modelID)
	if err != nil {
		return out, err
	}
	var fail failedResponse
	stream := p.completions.NewStreaming(ctx, params, option.WithMiddleware(fail.capture))
	defer stream.Close()

	acc := newAccumulator(modelID, onDelta)
	for stream.Next() {
		acc.add(stream.Current())
		if acc.meter.TooLarge != nil {
			return acc.message(), model.NewReplyTooLargeError(p.cfg.Name, acc.meter.TooLarge)
		}
	}
	streamErr := stream.Err()
	msg := acc.message()
	// A call is only known to be complete when the turn finished, so the
	// calls are announced together, in order, at the end.
	for i := range msg.ToolCalls {
		tc := msg.ToolCalls[i]
		onDelta(model.Delta{Type: "toolCall", ToolCall: &tc})
	}
	switch {
	case ctx.Err() != nil:
		return msg, model.NewTransportError(p.cfg.Name, ctx.Err(), acc.contentSeen)
	case streamErr != nil && !(acc.finished && isTransportError(streamErr)):
		return msg, p.classify(streamErr, &fail, acc.contentSeen, modelID)
	case !acc.finished:
		return msg, model.NewStreamCutError(p.cfg.Name, acc.contentSeen)
	}
	// A server that ignores stream_options.include_usage sends no usage,
	// and a connection lost after the finish loses only the usage chunk:
	// the message stands, its usage stays marked incomplete.
	msg.Usage.Incomplete = !acc.usageSeen
	return msg, nil
}

// isTransportError reports whether err came from the connection rather
// than from the server (an error response or an error event).
func isTransportError(err error) bool {
	var apiErr *sdk.Error
	var streamErr *ssestream.StreamError
	return !errors.As(err, &apiErr) && !errors.As(err, &streamErr)
}

// failedResponse keeps the status, headers and body of an error response,
// so an error is classified even when a compatible server's error body is
// not in OpenAI's shape.
type failedResponse struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   []byte
}

func (f *failedResponse) capture(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 {
		return res, err
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.status, f.header, f.body = res.StatusCode, res.Header.Clone(), body
	f.mu.Unlock()
	return res, nil
}

// classify turns an SDK error into a *model.ProviderError.
func (p *Provider) classify(err error, fail *failedResponse, contentSeen bool, modelID string) error {
	f := model.HTTPFailure{Provider: p.cfg.Name, KeyVar: p.cfg.KeyVar, Model: modelID, Err: err}
	var apiErr *sdk.Error
	var streamErr *ssestream.StreamError
	fail.mu.Lock()
	status, header, body := fail.status, fail.header, fail.body
	fail.mu.Unlock()
	switch {
	case errors.As(err, &apiErr):
		f.Status, f.Code, f.Type, f.Message = apiErr.StatusCode, apiErr.Code, apiErr.Type, apiErr.Message
		if apiErr.Response != nil {
			f.Header = apiErr.Response.Header
		}
		if f.Message == "" {
			f.Message = errorBodyMessage(body)
		}
		return model.NewHTTPError(f, time.Now())
	case status >= 400:
		f.Status, f.Header, f.Message = status, header, errorBodyMessage(body)
		return model.NewHTTPError(f, time.Now())
	case errors.As(err, &streamErr):
		msg := errorBodyMessage(streamErr.Event.Data)
		pe := &model.ProviderError{
			Provider: p.cfg.Name, Kind: model.KindTransient, Reason: "stream error", Err: err,
			Message: p.cfg.Name + ": the server reported an error mid-stream: " + msg,
		}
		switch {
		case model.IsContextLengthMessage(msg):
			pe.Kind = model.KindContextLength
			pe.Message = p.cfg.Name + ": the conversation is longer than the model's context window: " + msg
		case contentSeen:
			pe.Kind = model.KindStreamCut
			pe.Message += "; the reply is partial and its usage incomplete"
		}
		return pe
	}
	return model.NewTransportError(p.cfg.Name, err, contentSeen)
}

// errorBodyMessage digs the human message out of an error body in any of
// the shapes servers use: {"error":{"message":…}}, {"error":"…"},
// {"message":…}, or plain text.
func errorBodyMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var shape struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &shape) == nil {
		var s string
		if json.Unmarshal(shape.Error, &s) == nil && s != "" {
			return s
		}
		var inner struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(shape.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		if shape.Message != "" {
			return shape.Message
		}
		if shape.Detail != "" {
			return shape.Detail
		}
	}
	const limit = 500
	if len(body) > limit {
		body = body[:limit]
	}
	return string(body)
}
