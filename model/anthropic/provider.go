// Package anthropic is ink's adapter for Anthropic's Messages API
// ("anthropic/<model>"), built on the official anthropic-sdk-go: streaming
// text, thinking and tool use, tool results, prompt caching and usage.
//
// A Provider makes exactly one HTTP attempt per Stream call (the SDK's own
// retries are off); package providers wraps it with ink's retry policy. A
// request that gets no response headers, or a stream that sends nothing,
// for the stall limit (60 s by default) ends with a transient
// *model.StallError instead of waiting silently.
package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/inkdev/ink/model"
)

// Name is the provider name used in bindings and messages.
const Name = "anthropic"

// KeyVar is the environment variable that holds the API key.
const KeyVar = "ANTHROPIC_API_KEY"

// DefaultBaseURL is Anthropic's API root; the SDK appends /v1/messages.
const DefaultBaseURL = "https://api.anthropic.com"

// Config says how to reach the API. The adapter never reads the process
// environment itself: the caller resolves key and endpoint.
type Config struct {
	// APIKey is the API key; "" sends none (a proxy that adds its own).
	APIKey string
	// BaseURL is the API root ("" = DefaultBaseURL), without /v1.
	BaseURL string
	// Model is used when a request names none.
	Model string
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

// Provider streams assistant turns from the Messages API. It holds no
// per-request state and is safe for concurrent use; it owns nothing that
// needs closing.
type Provider struct {
	client sdk.Client
	model  string
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	// The SDK appends /v1/messages; a base given with /v1 (as OpenAI-style
	// endpoints are) would double it.
	base := strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	if base == "" {
		base = DefaultBaseURL
	}
	hc := model.GuardedClient(cfg.HTTPClient, cfg.ResponseHeaderTimeout, cfg.StreamIdleTimeout)
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Provider{client: sdk.NewClient(opts...), model: cfg.Model}
}

// Stream sends one request and assembles the streamed reply. See
// model.Provider for the contract; errors are *model.ProviderError.
func (p *Provider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	modelID := req.Model
	if modelID == "" {
		modelID = p.model
	}
	out := model.Message{Role: model.RoleAssistant, Model: modelID, Usage: &model.Usage{Incomplete: true}}
	params, err := buildParams(req, modelID)
	if err != nil {
		return out, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	acc := newAccumulator(modelID, onDelta)
	for stream.Next() {
		acc.add(stream.Current())
		if acc.meter.TooLarge != nil {
			return acc.message(), model.NewReplyTooLargeError(Name, acc.meter.TooLarge)
		}
	}
	msg := acc.message()
	var apiErr *sdk.Error
	err = stream.Err()
	// A connection lost after message_delta brought the stop reason and the
	// final usage loses nothing; any other failure counts.
	finished := acc.stopped || (acc.stopReason != "" && ctx.Err() == nil && !errors.As(err, &apiErr))
	if err != nil && !finished {
		return msg, classify(ctx, err, acc.contentSeen, modelID)
	}
	if ctx.Err() != nil {
		return msg, model.NewTransportError(Name, ctx.Err(), acc.contentSeen)
	}
	if !finished {
		return msg, model.NewStreamCutError(Name, acc.contentSeen)
	}
	msg.Usage.Incomplete = false
	return msg, nil
}

// classify turns an SDK error into a *model.ProviderError.
func classify(ctx context.Context, err error, contentSeen bool, modelID string) error {
	if ctx.Err() != nil {
		return model.NewTransportError(Name, ctx.Err(), contentSeen)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		f := model.HTTPFailure{
			Provider: Name, KeyVar: KeyVar, Model: modelID,
			Status:  apiErr.StatusCode,
			Type:    string(apiErr.Type()),
			Code:    string(apiErr.ErrorCode()),
			Message: apiErr.Message,
			Err:     err,
		}
		if apiErr.Response != nil {
			f.Header = apiErr.Response.Header
		}
		if f.Message == "" {
			f.Message = strings.TrimSpace(apiErr.RawJSON())
		}
		if apiErr.StatusCode == http.StatusOK {
			return streamErrorEvent(f, contentSeen)
		}
		return model.NewHTTPError(f, time.Now())
	}
	return model.NewTransportError(Name, err, contentSeen)
}

// streamErrorEvent classifies an error event sent inside a 200 stream
// (overloaded_error, api_error, …): transient unless the provider says the
// request itself is wrong, and a stream cut once part of the reply is in.
func streamErrorEvent(f model.HTTPFailure, contentSeen bool) *model.ProviderError {
	typ := f.Type
	if typ == "" {
		typ = "error"
	}
	pe := &model.ProviderError{
		Provider: Name, Kind: model.KindTransient, Reason: "stream " + typ, Err: f.Err,
		Message: Name + ": the server reported an error mid-stream (" + typ + "): " + f.Message,
	}
	switch {
	case model.IsContextLengthMessage(f.Message):
		pe.Kind = model.KindContextLength
		pe.Message = Name + ": the conversation is longer than the model's context window: " + f.Message
	case typ == "invalid_request_error" || typ == "authentication_error" || typ == "permission_error":
		pe.Kind = model.KindOther
	case contentSeen:
		pe.Kind = model.KindStreamCut
		pe.Message += "; the reply is partial and its usage incomplete"
	}
	return pe
}
