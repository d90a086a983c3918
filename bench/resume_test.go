package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// resumeSize is the size of the transcripts the resume benchmarks read.
const resumeSize = 100 << 20

// compactEvery is how much history the compacted fixture holds between
// compactions: about what a model with a 200k-token window holds before
// ink compacts its history, so a real transcript of that size looks like
// it.
const compactEvery = 800 << 10

// toolOutput is the content of every read result: 9 KB of code.
var toolOutput = strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { // ✓\n", 150)

// appendHistory appends to w tool turns (a line of text and a read call,
// then its 9 KB result) until the file reaches size, with a compaction
// that keeps the last turn every compactEvery bytes when compact is set.
func appendHistory(b *testing.B, w *session.Writer, from int64, size int64, compact bool) int64 {
	b.Helper()
	written, since := from, int64(0)
	for i := 0; written < size; i++ {
		id := fmt.Sprintf("call-%d", i)
		call := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "Reading the next file."}},
			ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i))}}}
		result := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: toolOutput}}}
		out, err := w.Append(session.Entry{Message: &call}, session.Entry{Message: &result})
		if err != nil {
			b.Fatal(err)
		}
		since += out[1].Offset - written
		written = out[1].Offset
		if compact && since > compactEvery {
			if _, err := w.AppendCompaction(session.CompactionEntry{Summary: "Read the handlers of pkg/ one by one; none checks the session yet.", FirstKept: out[0].ID, TokensBefore: 190000}); err != nil {
				b.Fatal(err)
			}
			since = 0
		}
	}
	return written
}

// crashedTranscript writes a transcript of at least size bytes of tool
// turns, compacted or not, that ends the way a crash leaves one: the last
// assistant message made two calls, one result is on disk, and the second
// result's line is torn halfway. It returns the path and the torn bytes,
// which follow the last complete line.
func crashedTranscript(b *testing.B, size int64, compact bool) (string, []byte) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "crashed.jsonl")
	w, err := session.Create(path, session.Header{ID: session.NewID(), Cwd: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	appendHistory(b, w, 0, size, compact)
	last := []model.ToolCall{
		{ID: "last-1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
		{ID: "last-2", Name: "grep", Args: json.RawMessage(`{"pattern":"TODO"}`)},
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: last}); err != nil {
		b.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "last-1", ToolName: "read", Content: toolOutput}}}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	// The torn line: the first half of the second result's entry.
	line, err := json.Marshal(map[string]any{"type": "message", "id": "torn", "message": model.Message{Role: model.RoleToolResult,
		Results: []model.ToolResult{{ToolCallID: "last-2", ToolName: "grep", Content: toolOutput}}}})
	if err != nil {
		b.Fatal(err)
	}
	return path, line[:len(line)/2]
}

// tear appends the torn bytes to path.
func tear(b *testing.B, path string, torn []byte) {
	b.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// readFloors are the floors of reading path: "readfile" (os.ReadFile) and
// "linescan" (a bufio line scan).
func readFloors(path string, want int64) []floor {
	return []floor{
		{name: "readfile", run: func(b *testing.B) {
			data, err := os.ReadFile(path)
			if err != nil || int64(len(data)) < want {
				b.Fatalf("read %d bytes: %v", len(data), err)
			}
		}},
		{name: "linescan", run: func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			r := bufio.NewReaderSize(f, 1<<20)
			lines := 0
			for {
				line, err := r.ReadSlice('\n')
				if err == bufio.ErrBufferFull {
					continue
				}
				if bytes.HasSuffix(line, []byte("\n")) {
					lines++
				}
				if err != nil {
					break
				}
			}
			if lines < 2 {
				b.Fatalf("scanned %d lines", lines)
			}
		}},
	}
}

// BenchmarkResumeRead measures what a worker does to a 100 MB transcript
// with a crash tail before the agent runs again — session.ReadForResume
// (every line found, every assistant line skimmed, the model's history
// decoded, of the other messages before it only the start read), ScanPairs
// over the history's skeleton, which must find it repairable, and
// the tail's repair (cut the torn line, fsync) — on a transcript compacted
// as ink compacts it and on one never compacted, whose whole history the
// model would need. "open" is the same with session.Open, which decodes
// every line. The torn line is put back between iterations, untimed. Each
// iteration runs beside two floors that read the same file: "readfile"
// (os.ReadFile) and "linescan" (a bufio line scan).
func BenchmarkResumeRead(b *testing.B) {
	for _, tc := range []struct {
		name    string
		compact bool
		open    bool
	}{{"compacted", true, false}, {"uncompacted", false, false}, {"open-uncompacted", false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			path, torn := crashedTranscript(b, resumeSize, tc.compact)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			clean := st.Size()
			tear(b, path, torn)
			med := paired(b, func(b *testing.B) {
				var skeleton []model.Message
				if tc.open {
					tr, err := session.Open(path)
					if err != nil || tr.Torn == nil {
						b.Fatalf("open: %v", err)
					}
					skeleton = tr.Messages
				} else {
					r, err := session.ReadForResume(path)
					if err != nil || r.Torn == nil {
						b.Fatalf("read: %v", err)
					}
					skeleton = r.Skeleton()
				}
				if scan := session.ScanPairs(skeleton); scan.State != session.Repairable || len(scan.Missing) != 1 {
					b.Fatalf("pair scan: %v %s", scan.State, scan.Reason)
				}
				rep, err := session.RepairTail(path)
				if err != nil || rep.Action != session.RepairTruncated || rep.Offset != clean {
					b.Fatalf("repair: %v %v", rep, err)
				}
				b.StopTimer()
				tear(b, path, torn)
				b.StartTimer()
			}, readFloors(path, clean)...)
			reportThroughput(b, clean+int64(len(torn)), med)
		})
	}
}

// reportThroughput reports MB/s for size bytes done in med (testing's own
// MB/s would use the timer that paired stops).
func reportThroughput(b *testing.B, size int64, med time.Duration) {
	if med > 0 {
		b.ReportMetric(float64(size)/1e6/med.Seconds(), "MB/s")
	}
}

// childIDPattern finds the child id in ink task's output.
var childIDPattern = regexp.MustCompile(`child session id: ([a-z0-9-]+)`)

// newChild runs a one-turn `ink task` in h on script and returns the id
// and transcript of the child it started.
func newChild(b *testing.B, h *hermetic, bin, script string) (string, string) {
	b.Helper()
	out, err := h.command(bin, "task", "--model", "script:"+script, "read every handler").CombinedOutput()
	m := childIDPattern.FindSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("ink task: %v\n%s", err, out)
	}
	id := string(m[1])
	paths, _ := filepath.Glob(filepath.Join(h.home, "sessions", "*", "*", "children", id+".jsonl"))
	if len(paths) != 1 {
		b.Fatalf("child transcript of %s: %v", id, paths)
	}
	return id, paths[0]
}

// resumeFloor is a floor that resumes child id in h for one more turn.
func resumeFloor(name string, h *hermetic, bin, script, id string) floor {
	return floor{name: name, run: func(b *testing.B) {
		if out, err := h.command(bin, "task", "--model", "script:"+script, "--resume", id, "go on").CombinedOutput(); err != nil || !strings.Contains(string(out), "hello from the script") {
			b.Fatalf("ink task --resume %s: %v\n%s", id, err, out)
		}
	}}
}

// BenchmarkResume measures `ink task --resume` end to end on a child whose
// transcript is 100 MB: the supervisor validates it from its header and
// tail, a worker reads it once under its lease and runs one more model
// turn, and the supervisor composes the result. The child is made by a
// first `ink task`, then given 100 MB of tool turns (compacted as ink
// compacts them, or never) and an attempt end, untimed. Each iteration
// runs beside the floor "cat", a process that reads the file
// (`cat FILE > /dev/null`), and the floor "one-turn", the same resume of
// a child that holds one turn (made by another `ink task` in the same
// INK_HOME and directory). It reports the peak resident set of the
// supervisor and of the worker, in MiB and as a share of the file's size.
func BenchmarkResume(b *testing.B) {
	bin := inkBinary(b)
	for _, tc := range []struct {
		name    string
		compact bool
	}{{"compacted", true}, {"uncompacted", false}} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHermetic(b)
			script := h.write(b, "answer.yaml", oneTurnScript)
			id, path := newChild(b, h, bin, script)
			small, _ := newChild(b, h, bin, script)
			w, err := session.OpenWriter(path)
			if err != nil {
				b.Fatal(err)
			}
			st, _ := os.Stat(path)
			attempt := session.NewID()
			if err := w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: attempt}); err != nil {
				b.Fatal(err)
			}
			appendHistory(b, w, st.Size(), resumeSize, tc.compact)
			u := model.Usage{Input: 190000, Output: 20000}
			if err := w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: attempt, Status: "interrupted", Reason: "host lost", Usage: &u}); err != nil {
				b.Fatal(err)
			}
			w.Close()
			st, _ = os.Stat(path)
			size := st.Size()
			cat := floor{name: "cat", run: func(b *testing.B) {
				c := exec.Command("cat", path)
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
			}}
			var sup, work int64
			med := paired(b, func(b *testing.B) {
				cmd := h.command(bin, "task", "--model", "script:"+script, "--resume", id, "go on")
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				s := startSampler(cmd.Process.Pid, false)
				err := cmd.Wait()
				workers, self, _ := s.finish()
				if err != nil || !strings.Contains(out.String(), "hello from the script") {
					b.Fatalf("ink task --resume: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
				}
				sup = max(sup, self)
				for _, kb := range workers {
					work = max(work, kb)
				}
			}, cat, resumeFloor("one-turn", h, bin, script, small))
			reportThroughput(b, size, med)
			b.ReportMetric(float64(size)/(1<<20), "file-MB")
			b.ReportMetric(mib(sup), "supervisor-rss-MB")
			b.ReportMetric(mib(work), "worker-rss-MB")
			b.ReportMetric(float64(sup)*1024/float64(size), "supervisor-rss-per-file")
			b.ReportMetric(float64(work)*1024/float64(size), "worker-rss-per-file")
		})
	}
}

// besideSize is how much other sessions hold beside the resumed child in
// BenchmarkResumeBeside.
const besideSize = 100 << 20

// BenchmarkResumeBeside measures `ink task --resume ID` without --parent
// of a one-turn child beside other sessions of the same directory, newer
// than the child's, whose children hold 100 MB in all (four of 25 MB),
// against the floor "alone": the same resume of a one-turn child in an
// INK_HOME with no other session. A resume finds its child by its file
// name and reads no other session, so the two should cost the same.
func BenchmarkResumeBeside(b *testing.B) {
	bin := inkBinary(b)
	h, alone := newHermetic(b), newHermetic(b)
	script := h.write(b, "answer.yaml", oneTurnScript)
	aloneScript := alone.write(b, "answer.yaml", oneTurnScript)
	id, path := newChild(b, h, bin, script)
	aloneID, _ := newChild(b, alone, bin, aloneScript)
	ownerPath := filepath.Dir(filepath.Dir(path)) + ".jsonl" // <slug>/<owner>/children/<id>.jsonl
	owner, err := session.ReadHeader(ownerPath)
	if err != nil {
		b.Fatal(err)
	}
	sessions := filepath.Dir(ownerPath)
	var others int64
	for i := range 4 {
		sid, kid := session.NewID(), session.NewID()
		main := filepath.Join(sessions, sid+".jsonl")
		w, err := session.Create(main, session.Header{ID: sid, Cwd: owner.Cwd, CreatedAt: owner.CreatedAt.Add(time.Duration(i+1) * time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		w.Close()
		cw, err := session.Create(session.ChildPath(main, kid), session.Header{ID: kid, Cwd: owner.Cwd, Parent: sid})
		if err != nil {
			b.Fatal(err)
		}
		others = appendHistory(b, cw, 0, besideSize/4, false) + others
		cw.Close()
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	resume := resumeFloor("beside", h, bin, script, id)
	paired(b, resume.run, resumeFloor("alone", alone, bin, aloneScript, aloneID))
	b.ReportMetric(float64(others)/(1<<20), "others-MB")
	b.ReportMetric(float64(st.Size())/1024, "child-KB")
}
