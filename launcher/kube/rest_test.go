package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/version"
)

// apiRecorder is an apiserver enough for one launch: it records every
// request (method, URL, body) and plays a pod that runs at once and
// announces a worker nobody can reach.
type apiRecorder struct {
	mu   sync.Mutex
	reqs []string
}

func (a *apiRecorder) all() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.reqs, "\n")
}

func (a *apiRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.reqs = append(a.reqs, fmt.Sprintf("%s %s %s", r.Method, r.URL, body))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/pods"):
		var pod corev1.Pod
		if err := json.Unmarshal(body, &pod); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pod.ResourceVersion = "1"
		pod.Status.Phase = corev1.PodPending
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&pod)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/pods") && r.URL.Query().Get("watch") == "true":
		name := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
		pod := corev1.Pod{}
		pod.APIVersion, pod.Kind = "v1", "Pod"
		pod.Name, pod.ResourceVersion = name, "2"
		pod.Spec.NodeName = "node-1"
		pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "127.0.0.1"
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "MODIFIED", "object": pod})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/log"):
		w.Header().Set("Content-Type", "text/plain")
		// A worker of this version that listens where nothing answers.
		fmt.Fprintf(w, "ink-worker-remote %d %s cert=%s listen=[::]:1\n", ipc.ProtocolVersion, version.Ink, strings.Repeat("ab", 32))
	case r.Method == http.MethodDelete:
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/selfsubjectaccessreviews"):
		var review map[string]any
		_ = json.Unmarshal(body, &review)
		review["status"] = map[string]any{"allowed": true}
		_ = json.NewEncoder(w).Encode(review)
	default:
		http.Error(w, "not here", http.StatusNotFound)
	}
}

// TestNoKeyReachesTheAPIServer: with provider keys in the environment and
// in the attempt's spec, nothing the launcher sends the apiserver — the
// pod, the watch, the log, the deletes, the access reviews — holds a key.
func TestNoKeyReachesTheAPIServer(t *testing.T) {
	keys := map[string]string{
		"ANTHROPIC_API_KEY": fakeKey,
		"OPENAI_API_KEY":    "sk-proj-FAKEOPENAIKEY0123456789abcdef",
		"INK_SECRET_TOKEN":  "ink-fake-token-0123456789",
		"GITHUB_TOKEN":      "ghp_FAKEGITHUBTOKEN0123456789",
	}
	for k, v := range keys {
		t.Setenv(k, v)
	}
	rec := &apiRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	api, err := newRESTPods(&rest.Config{Host: srv.URL}, "ink-test")
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	for k, v := range keys {
		spec.Credentials[k] = v
	}
	spec.Settings = map[string]string{"INK_STREAM_IDLE_TIMEOUT": "90s"}
	l, err := newLauncher(t.Context(), Config{api: api, Namespace: "ink-test", Image: "registry.example/ink:test", StartTimeout: 10 * time.Second, Environ: os.Environ()}, ConnectPodIP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Launch(t.Context(), spec); err == nil {
		t.Fatal("a launch with no worktree succeeded")
	}
	if _, err := l.Dial(t.Context(), command.Dial{Spec: spec, Env: ipc.WorkerEnv(os.Environ())}); err == nil {
		t.Fatal("dialed a worker that does not listen")
	}
	l.Close()
	// The check's own pod (it asks the image for its version) goes to
	// the same recorder; nothing answers it, so bound the wait.
	cctx, ccancel := context.WithTimeout(t.Context(), 3*time.Second)
	_ = check(cctx, api, "ink-test", "", false)
	ccancel()
	all := rec.all()
	for _, want := range []string{"POST /api/v1/namespaces/ink-test/pods", "watch=true", "/log?", "DELETE /api/v1/namespaces/ink-test/pods/ink-", "DELETE /api/v1/namespaces/ink-test/pods?labelSelector=", "selfsubjectaccessreviews"} {
		if !strings.Contains(all, want) {
			t.Errorf("the apiserver never saw %q:\n%s", want, all)
		}
	}
	for k, v := range keys {
		if strings.Contains(all, v) || strings.Contains(all, v[:12]) {
			t.Errorf("%s reached the apiserver:\n%s", k, all)
		}
	}
	for _, word := range []string{"credentials", "Credentials", "INK_STREAM_IDLE_TIMEOUT"} {
		if strings.Contains(all, word) {
			t.Errorf("%q reached the apiserver", word)
		}
	}
}
