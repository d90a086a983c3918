package bench

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/connect"
	"github.com/inkdev/ink/orchestrator"
)

// oneTurnScript answers every request with one line of text: one model turn,
// no tool call.
const oneTurnScript = "rules:\n  - reply: {text: \"hello from the script\", usage: {input: 100, output: 5}}\n"

// BenchmarkTaskRoundTrip measures one child that answers in one turn on the
// script model, each iteration beside the floor "loop": the same script run
// by loop.Run in this process (no process, no transcript, no lease; timed
// over 100 runs, since one is too short to time alone).
//   - ink-task: `ink task --model script:… PROMPT`, the CLI end to end (the
//     ink process, its shell session, one worker, the child's transcript and
//     lease, the composed result on stdout);
//   - orchestrator: the same task through orchestrator.Task in this process,
//     so the difference to ink-task is the CLI process itself.
func BenchmarkTaskRoundTrip(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	script := h.write(b, "one-turn.yaml", oneTurnScript)
	binding := model.Binding{Provider: "script", Model: script}
	prov, err := connect.Open(binding, os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	inProcess := floor{name: "loop", reps: 100, run: func(b *testing.B) {
		res, err := loop.Run(context.Background(), loop.Options{
			Provider: prov,
			Request:  model.Request{Model: binding.Model},
			History:  []model.Message{model.UserText("say hello")},
		})
		if err != nil {
			b.Fatal(err)
		}
		if res.FinalText != "hello from the script" {
			b.Fatalf("loop answered %q", res.FinalText)
		}
	}}

	b.Run("ink-task", func(b *testing.B) {
		paired(b, func(b *testing.B) {
			out, err := h.command(bin, "task", "--model", "script:"+script, "say hello").Output()
			if err != nil {
				b.Fatalf("ink task: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "hello from the script") {
				b.Fatalf("ink task printed %q", out)
			}
		}, inProcess)
	})
	b.Run("orchestrator", func(b *testing.B) {
		paired(b, func(b *testing.B) {
			orc, err := orchestrator.New(orchestrator.Config{
				InkHome: h.home, Exe: bin, Cwd: h.dir, Binding: binding, Environ: h.vars, MaxDepth: 1,
			})
			if err != nil {
				b.Fatal(err)
			}
			res, err := orc.Task(context.Background(), orchestrator.TaskOptions{Args: orchestrator.TaskArgs{Prompt: "say hello"}})
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != orchestrator.StatusCompleted || !strings.Contains(res.Content, "hello from the script") {
				b.Fatalf("task ended %s: %s", res.Status, res.Content)
			}
		}, inProcess)
	})
}
