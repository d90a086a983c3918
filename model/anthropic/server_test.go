package anthropic_test

import (
	"testing"

	"github.com/inkdev/ink/model/internal/apitest"
)

// reply is one scripted answer of the fake Messages API.
type reply = apitest.Reply

// fakeAPI is the fake Messages API: it answers POST /v1/messages.
type fakeAPI = apitest.Server

// recorder collects the deltas a provider streams.
type recorder = apitest.Recorder

func newFakeAPI(t testing.TB, replies ...reply) *fakeAPI {
	t.Helper()
	return apitest.NewServer(t, "/v1/messages", func(path string) string {
		return `{"type":"error","error":{"type":"not_found_error","message":"no such path ` + path + `"}}`
	}, replies...)
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	return apitest.Fixture(t, name)
}
