// Package connect opens the model.Provider of a binding: the script model,
// or an SDK adapter (anthropic, openai and the OpenAI-compatible presets)
// for the key and endpoint that package providers checked, guarded against
// stalls and wrapped in the default retry policy. It is the only package
// that links the provider SDKs, and only a worker imports it: the
// supervisor checks bindings with providers.Check and never talks to a
// model.
package connect

import (
	"fmt"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/anthropic"
	"github.com/inkdev/ink/model/openai"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/model/script"
)

// Open returns the provider for b, ready for concurrent use. "script" loads
// the script file b.Model; every other provider is built from its key and
// endpoint in env (nil = the process environment), checked by
// providers.Check, guarded against stalls (a request with no response
// headers, or a stream with no byte, for the stall limit is a transient
// error) and wrapped in providers.DefaultRetryPolicy. A missing key, or a
// stall limit that is not a duration, is an error naming the variable to
// set. Nothing is contacted until the first Stream.
func Open(b model.Binding, env func(string) string) (model.Provider, error) {
	if b.Provider == "script" {
		s, err := script.Load(b.Model)
		if err != nil {
			return nil, fmt.Errorf("open model %s: %w", b, err)
		}
		return s, nil
	}
	st, err := providers.Check(b, env)
	if err != nil {
		return nil, err
	}
	var inner model.Provider
	switch st.Provider {
	case "anthropic":
		inner = anthropic.New(anthropic.Config{APIKey: st.APIKey, BaseURL: st.BaseURL, Model: st.Model,
			ResponseHeaderTimeout: st.ResponseHeaderTimeout, StreamIdleTimeout: st.StreamIdleTimeout})
	default:
		inner = openai.New(openai.Config{
			Name: st.Provider, APIKey: st.APIKey, KeyVar: st.KeyVar, BaseURL: st.BaseURL, Model: st.Model,
			ResponseHeaderTimeout: st.ResponseHeaderTimeout, StreamIdleTimeout: st.StreamIdleTimeout,
			LegacyMaxTokens: st.LegacyMaxTokens, ReasoningEffort: st.ReasoningEffort,
		})
	}
	return providers.Retrying(st.Provider, inner, providers.DefaultRetryPolicy()), nil
}
