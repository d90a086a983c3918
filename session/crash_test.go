package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// runAppender appends turns (an assistant call, then a large result) to the
// transcript at path forever; it is the process the crash test kills.
func runAppender(path string) int {
	w, err := OpenWriter(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: NewID(), Pid: os.Getpid()}); err != nil {
		return 1
	}
	big := strings.Repeat("输出 output 🙂 ", 40000) // about 800 KB per result
	for i := 0; ; i++ {
		id := fmt.Sprintf("call_%d", i)
		call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "bash", Args: json.RawMessage(`{"command":"make"}`)}}}
		if _, err := w.AppendMessage(call); err != nil {
			return 1
		}
		res := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "bash", Content: big}}}
		if _, err := w.AppendMessage(res); err != nil {
			return 1
		}
	}
}

// TestCrashedAppenderLeavesARepairableTranscript kills a real appending
// process with SIGKILL at several points and checks that the transcript
// always opens, that Repair brings it back to a consistent history without
// touching the bytes before its tail, and that appending then works.
func TestCrashedAppenderLeavesARepairableTranscript(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, after := range []int64{1 << 20, 3 << 20, 5<<20 + 333} {
		t.Run(fmt.Sprintf("kill after %d bytes", after), func(t *testing.T) {
			path := newTranscript(t, Header{}, []model.Message{model.UserText("build it")})
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), appenderEnv+"="+path)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			deadline := time.Now().Add(20 * time.Second)
			for {
				fi, err := os.Stat(path)
				if err == nil && fi.Size() >= after {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("appender %d wrote too little within 20 s", i)
				}
				time.Sleep(time.Millisecond)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()

			before := readFile(t, path)
			tr, err := Open(path)
			if err != nil {
				t.Fatalf("a killed appender left a transcript that does not open: %v", err)
			}
			scan := ScanPairs(tr.Messages)
			if scan.State == Refused {
				t.Fatalf("crash tail refused: %s", scan.Reason)
			}
			rep, err := Repair(path)
			if err != nil {
				t.Fatal(err)
			}
			after := readFile(t, path)
			keep := len(before)
			if tr.Torn != nil && !tr.Torn.NeedsNewline {
				keep = int(tr.Torn.Offset)
			}
			if !bytes.Equal(after[:keep], before[:keep]) {
				t.Fatal("repair changed bytes before the tail")
			}
			fixed, err := Open(path)
			if err != nil || fixed.Torn != nil {
				t.Fatalf("after repair (%s): %v torn %+v", rep, err, fixed.Torn)
			}
			if s := ScanPairs(fixed.Messages); s.State != Consistent {
				t.Fatalf("after repair: %v %s", s.State, s.Reason)
			}
			w, err := OpenWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendMessage(model.UserText("continue")); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if final, err := Open(path); err != nil || final.Torn != nil {
				t.Fatalf("after append: %v", err)
			}
			t.Logf("kept %d of %d bytes; %s", keep, len(before), rep)
		})
	}
}
