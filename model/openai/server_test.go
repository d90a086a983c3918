package openai_test

import (
	"testing"

	"github.com/inkdev/ink/model/internal/apitest"
)

// reply is one scripted answer of the fake Chat Completions API.
type reply = apitest.Reply

// fakeAPI is the fake Chat Completions API: it answers POST /v1/chat/completions.
type fakeAPI = apitest.Server

// recorder collects the deltas a provider streams.
type recorder = apitest.Recorder

func newFakeAPI(t testing.TB, replies ...reply) *fakeAPI {
	t.Helper()
	return apitest.NewServer(t, "/v1/chat/completions", func(path string) string {
		return `{"error":{"message":"no such path ` + path + `","type":"invalid_request_error"}}`
	}, replies...)
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	return apitest.Fixture(t, name)
}
