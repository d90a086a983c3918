package openai_test

import (
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/internal/apitest"
	"github.com/inkdev/ink/model/openai"
	"github.com/inkdev/ink/model/providers"
)

// stallAPI is the Chat Completions API under the stall cases every
// streaming provider must pass.
var stallAPI = apitest.StallAPI{
	Name:  "openai",
	Serve: newFakeAPI,
	Open: func(f *apitest.Server) model.Provider {
		p := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-5.4",
			ResponseHeaderTimeout: apitest.StallLimit, StreamIdleTimeout: apitest.StallLimit})
		return providers.Retrying("openai", p, apitest.FastRetries)
	},
	PartialEvents: 2,
}

func TestStalls(t *testing.T) {
	t.Parallel()
	apitest.Stalls(t, stallAPI)
}

func TestSlowStreamIsNoStall(t *testing.T) {
	t.Parallel()
	apitest.SlowStreamIsNoStall(t, stallAPI)
}
