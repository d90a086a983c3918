package openai_test

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// BenchmarkStreamToolTurn measures one streamed tool-use turn through the
// adapter against a loopback server; BenchmarkStreamToolTurnFloor reads the
// same bytes with a bare HTTP request, the floor it is measured against.
func BenchmarkStreamToolTurn(b *testing.B) {
	f := newFakeAPI(b, reply{Body: fixture(b, "tools.sse")})
	p := newProvider(f)
	req := userAsks("look")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamToolTurnFloor(b *testing.B) {
	f := newFakeAPI(b, reply{Body: fixture(b, "tools.sse")})
	b.ReportAllocs()
	for b.Loop() {
		res, err := http.Post(f.URL+"/v1/chat/completions", "application/json", nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}
