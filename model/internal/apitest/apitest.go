// Package apitest is the fake model API the provider packages test
// against: an httptest server that answers one path with scripted replies
// and records every request, a recorder of streamed deltas, the testdata
// fixtures, and the stall cases every streaming provider must pass. It is
// imported only by tests.
package apitest

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

	"github.com/inkdev/ink/model"
)

// Reply is one scripted answer of a Server.
type Reply struct {
	Status int
	Header map[string]string
	Body   string
	// Cut writes Body and then drops the connection mid-response.
	Cut bool
	// Hang writes Body and then waits until the client goes away.
	Hang bool
	// Silent sends nothing at all, not even headers, until the client
	// goes away: a server that never answers.
	Silent bool
	// Trickle writes Body one SSE event at a time, waiting this long
	// before each: a slow server that is still alive.
	Trickle time.Duration
}

// Server is an httptest server that answers POST to its path with its
// replies in order (the last one repeats) and records every request. The
// test's cleanup closes it. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	path     string
	notFound func(path string) string
	mu       sync.Mutex
	replies  []Reply
	bodies   [][]byte
	headers  []http.Header
}

// NewServer starts a Server answering path; a request for another path
// gets a 404 whose JSON body is notFound(its path), in the API's own error
// format.
func NewServer(t testing.TB, path string, notFound func(path string) string, replies ...Reply) *Server {
	t.Helper()
	s := &Server{path: path, notFound: notFound, replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	rp := s.replies[min(n, len(s.replies)-1)]
	s.mu.Unlock()

	if r.URL.Path != s.path {
		http.Error(w, s.notFound(r.URL.Path), http.StatusNotFound)
		return
	}
	status := rp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if rp.Silent {
		<-r.Context().Done()
		return
	}
	if rp.Cut {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(buf, "%x\r\n%s\r\n", len(rp.Body), rp.Body)
		buf.Flush()
		return
	}
	ctype := "text/event-stream"
	if status != http.StatusOK {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	for k, v := range rp.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if rp.Trickle > 0 {
		w.(http.Flusher).Flush()
		for _, event := range strings.SplitAfter(rp.Body, "\n\n") {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(rp.Trickle):
			}
			io.WriteString(w, event)
			w.(http.Flusher).Flush()
		}
		return
	}
	io.WriteString(w, rp.Body)
	w.(http.Flusher).Flush()
	if rp.Hang {
		<-r.Context().Done()
	}
}

// Requests returns the decoded JSON bodies the server received, in order.
func (s *Server) Requests(t testing.TB) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, b := range s.bodies {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("server got a body that is not JSON: %v\n%s", err, b)
		}
		out = append(out, m)
	}
	return out
}

// Header returns the headers of the i-th request.
func (s *Server) Header(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i]
}

// Recorder collects the deltas a provider streams; safe for use from the
// provider's goroutine.
type Recorder struct {
	mu     sync.Mutex
	deltas []model.Delta
}

// Add records d; pass it to Provider.Stream.
func (r *Recorder) Add(d model.Delta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas = append(r.deltas, d)
}

// OfType returns the deltas of type typ, in order.
func (r *Recorder) OfType(typ string) []model.Delta {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []model.Delta
	for _, d := range r.deltas {
		if d.Type == typ {
			out = append(out, d)
		}
	}
	return out
}

// Text joins the text of the deltas of type typ.
func (r *Recorder) Text(typ string) string {
	var b strings.Builder
	for _, d := range r.OfType(typ) {
		b.WriteString(d.Text)
	}
	return b.String()
}

// Fixture returns the file testdata/name of the test's package.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
