package anthropic_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of the fake Messages API.
type reply struct {
	status int
	header map[string]string
	body   string
	// cut writes body and then drops the connection mid-response.
	cut bool
	// hang writes body and then waits until the client goes away.
	hang bool
	// silent sends nothing at all, not even headers, until the client goes
	// away: a server that never answers.
	silent bool
	// trickle writes body one SSE event at a time, waiting this long
	// before each: a slow server that is still alive.
	trickle time.Duration
}

// fakeAPI is an httptest server that answers POST /v1/messages with its
// replies in order (the last one repeats) and records every request.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	bodies  [][]byte
	headers []http.Header
}

func newFakeAPI(t testing.TB, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	rp := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()

	if r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no such path `+r.URL.Path+`"}}`, http.StatusNotFound)
		return
	}
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	if rp.silent {
		<-r.Context().Done()
		return
	}
	if rp.cut {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(buf, "%x\r\n%s\r\n", len(rp.body), rp.body)
		buf.Flush()
		return
	}
	ctype := "text/event-stream"
	if status != http.StatusOK {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if rp.trickle > 0 {
		w.(http.Flusher).Flush()
		for _, event := range strings.SplitAfter(rp.body, "\n\n") {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(rp.trickle):
			}
			io.WriteString(w, event)
			w.(http.Flusher).Flush()
		}
		return
	}
	io.WriteString(w, rp.body)
	w.(http.Flusher).Flush()
	if rp.hang {
		<-r.Context().Done()
	}
}

// requests returns the decoded JSON bodies the server received.
func (f *fakeAPI) requests(t *testing.T) []map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, b := range f.bodies {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("server got a body that is not JSON: %v\n%s", err, b)
		}
		out = append(out, m)
	}
	return out
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
