package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// fanoutScript: the main agent starts three worktree children at once;
// child N commits n-N.txt, leaves draft-N.txt uncommitted and prints its
// hostname (the pod's name) and what it sees of the supervisor's INK_HOME.
func fanoutScript(tag, inkHome string) string {
	var b strings.Builder
	b.WriteString("rules:\n  - when: {depth: 0, turn: 1}\n    reply:\n      text: fanning out\n      calls:\n")
	for n := 1; n <= 3; n++ {
		fmt.Fprintf(&b, "        - {tool: task, args: {prompt: \"fan-%d\", worktree: true}}\n", n)
	}
	b.WriteString("  - when: {depth: 0, tool: task}\n    reply: {text: \"all three done\"}\n")
	for n := 1; n <= 3; n++ {
		f := fmt.Sprintf("%s-%d.txt", tag, n)
		cmd := fmt.Sprintf(`echo pod-%d > %s && git add %s && git -c user.name=pod -c user.email=pod@ink.invalid commit -qm pod-commit-%d && echo draft > draft-%s && echo host=$(hostname) && echo ink-home: && ls %s`, n, f, f, n, f, inkHome)
		fmt.Fprintf(&b, "  - when: {depth: 1, user: \"fan-%d\", turn: 1}\n    reply:\n      calls: [{tool: bash, args: {command: %q}}]\n", n, cmd)
		fmt.Fprintf(&b, "  - when: {depth: 1, user: \"fan-%d\"}\n    reply: {text: \"done %d\"}\n", n, n)
	}
	return b.String()
}

// watchNodes records the node of every pod seen until stop is called.
func (w *world) watchNodes() (stop func() map[string]string) {
	var mu sync.Mutex
	seen := map[string]string{}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			pods, err := w.c.Pods(context.Background(), "ink")
			if err == nil {
				mu.Lock()
				for _, p := range pods {
					if p.Spec.NodeName != "" {
						seen[p.Name] = p.Spec.NodeName
					}
				}
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() map[string]string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// TestFanOut: the main agent runs locally, its three worktree children in
// pods on two nodes; the run completes, the children's transcripts on the
// supervisor's disk are complete, their worktrees hold the pods' commits
// and uncommitted files, `ink worktrees merge` merges one back, and no pod
// is left. Once reaching pods by their IP, once through port-forwards.
func TestFanOut(t *testing.T) {
	w := newWorld(t)
	for _, connect := range []string{"pod-ip", "port-forward"} {
		t.Run(connect, func(t *testing.T) {
			script := w.write("fanout-"+connect+".yaml", fanoutScript(connect, w.ink))
			stop := w.watchNodes()
			began := time.Now()
			p := w.run(t, 3*time.Minute, append(kubeArgs(connect), "run", "--model", "script:"+script, "fan out")...)
			took := time.Since(began)
			nodes := stop()
			t.Logf("%s: ink run with three pods took %s; pods on %v", connect, took.Round(time.Millisecond), nodes)
			if !strings.Contains(p.stdout.String(), "all three done") {
				t.Errorf("stdout %q, want the main agent's answer", p.stdout)
			}
			used := map[string]bool{}
			for _, n := range nodes {
				used[n] = true
			}
			if len(nodes) != 3 || (connect == "pod-ip" && len(used) != 2) {
				t.Errorf("pods seen %v: want three pods over both nodes", nodes)
			}

			main := w.newestSession(t)
			recs := records(t, main)
			if len(recs) != 3 {
				t.Fatalf("%d task records, want 3: %+v", len(recs), recs)
			}
			var merged bool
			for _, rec := range recs {
				if rec.Status != "completed" || rec.Worktree == nil || rec.Worktree.Disposition != "kept-work" {
					t.Errorf("child %s: status %s (%s), worktree %+v; want completed, kept-work", rec.ChildID, rec.Status, rec.Reason, rec.Worktree)
					continue
				}
				tr, err := session.Open(session.ChildPath(main, rec.ChildID))
				if err != nil {
					t.Fatal(err)
				}
				end, ok := tr.LastAttemptEnd()
				if !ok || end.Status != "completed" || tr.Torn != nil {
					t.Errorf("child %s transcript ends %+v (%v), torn %+v", rec.ChildID, end, ok, tr.Torn)
				}
				var bashOut, answer, prompt string
				for _, m := range tr.Messages {
					for _, r := range m.Results {
						if r.ToolName == "bash" {
							bashOut = r.Content
						}
					}
					if m.Role == "assistant" && m.Text() != "" {
						answer = m.Text()
					}
					if m.Role == "user" && prompt == "" {
						prompt = m.Text()
					}
				}
				var n int
				if _, err := fmt.Sscanf(strings.TrimSpace(prompt), "fan-%d", &n); err != nil {
					t.Fatalf("child %s prompt %q", rec.ChildID, prompt)
				}
				if answer != fmt.Sprintf("done %d", n) {
					t.Errorf("child %d answered %q", n, answer)
				}
				host := ""
				for _, line := range strings.Split(bashOut, "\n") {
					if h, ok := strings.CutPrefix(line, "host="); ok {
						host = h
					}
				}
				if _, inPod := nodes[host]; !inPod {
					t.Errorf("child %d ran on host %q, not in one of the pods %v; bash said:\n%s", n, host, nodes, bashOut)
				}
				// The pod has the worktree's parent under INK_HOME as a mount
				// point, nothing of the supervisor's own INK_HOME.
				if !strings.Contains(bashOut, "ink-home:") || strings.Contains(bashOut, "sessions") {
					t.Errorf("child %d's pod could see the supervisor's INK_HOME: %s", n, bashOut)
				}
				wt := rec.Worktree.Path
				if b, err := os.ReadFile(filepath.Join(wt, fmt.Sprintf("%s-%d.txt", connect, n))); err != nil || string(b) != fmt.Sprintf("pod-%d\n", n) {
					t.Errorf("child %d's worktree %s-%d.txt = %q, %v", n, connect, n, b, err)
				}
				if b, err := os.ReadFile(filepath.Join(wt, fmt.Sprintf("draft-%s-%d.txt", connect, n))); err != nil || string(b) != "draft\n" {
					t.Errorf("child %d's uncommitted draft-%s-%d.txt = %q, %v", n, connect, n, b, err)
				}
				if log := w.git("log", "--format=%s", rec.Worktree.Branch); !strings.HasPrefix(log, fmt.Sprintf("pod-commit-%d\n", n)) {
					t.Errorf("branch %s: %q, want the pod's commit on top", rec.Worktree.Branch, log)
				}
				if !merged {
					w.run(t, time.Minute, "worktrees", "merge", "--commit", rec.ChildID)
					if b, err := os.ReadFile(filepath.Join(w.repo, fmt.Sprintf("%s-%d.txt", connect, n))); err != nil || string(b) != fmt.Sprintf("pod-%d\n", n) {
						t.Errorf("after ink worktrees merge, %s-%d.txt in the checkout = %q, %v", connect, n, b, err)
					}
					merged = true
				}
			}
			gone := w.waitNoPods(t, 10*time.Second)
			t.Logf("%s: every pod gone %s after ink run exited", connect, gone.Round(time.Millisecond))
		})
	}
}
