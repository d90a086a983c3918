package anthropic_test

import (
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/anthropic"
	"github.com/inkdev/ink/model/internal/apitest"
	"github.com/inkdev/ink/model/providers"
)

// stallAPI is the Messages API under the stall cases every streaming
// provider must pass.
var stallAPI = apitest.StallAPI{
	Name:  anthropic.Name,
	Serve: newFakeAPI,
	Open: func(f *apitest.Server) model.Provider {
		p := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: f.URL, Model: testModel,
			ResponseHeaderTimeout: apitest.StallLimit, StreamIdleTimeout: apitest.StallLimit})
		return providers.Retrying(anthropic.Name, p, apitest.FastRetries)
	},
	PartialEvents: 3,
}

func TestStalls(t *testing.T) {
	t.Parallel()
	apitest.Stalls(t, stallAPI)
}

func TestSlowStreamIsNoStall(t *testing.T) {
	t.Parallel()
	apitest.SlowStreamIsNoStall(t, stallAPI)
}
