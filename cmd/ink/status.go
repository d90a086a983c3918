package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// maxTokenScan bounds the transcripts `ink status` reads to count tokens;
// a larger one shows no count rather than slowing the listing down.
const maxTokenScan = 32 << 20

func newStatusCmd(g *globals) *cobra.Command {
	return uses(&cobra.Command{
		Use:   "status",
		Short: "Show live workers: agent, pid, lease state, heartbeat, tokens",
		Long: `Status lists every live lease holder under $INK_HOME: each worker (the main
agent and every child) and the shell parent of an ink task. For each it shows
the agent, the pid, the lease state (held, or hung when its heartbeat stopped),
the heartbeat age, how long it has run, the tokens of its current attempt as
recorded in its transcript (and, under --budget, what is left of the tree's
budget), and the transcript. A hung worker can be stopped
with: ink leases break PATH`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			infos, err := lease.List(home)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			var live []lease.Info
			for _, in := range infos {
				if in.Err == nil && in.State != lease.Free {
					live = append(live, in)
				}
			}
			if g.json {
				err = printStatusJSON(live)
			} else {
				err = printStatus(live)
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write the status: %v", err)}
			}
			return nil
		},
	}, "json")
}

// statusRow is one live worker as `ink status --json` prints it.
type statusRow struct {
	Agent          string       `json:"agent"`
	Pid            int          `json:"pid"`
	Lease          string       `json:"lease"`
	HeartbeatAgeMs int64        `json:"heartbeatAgeMs"`
	StartedAt      *time.Time   `json:"startedAt,omitempty"`
	ProgressSeq    int64        `json:"progressSeq"`
	Session        string       `json:"session,omitempty"`
	AttemptID      string       `json:"attemptId,omitempty"`
	Epoch          int64        `json:"epoch,omitempty"`
	Tokens         *model.Usage `json:"tokens,omitempty"`
	// Budget is the token budget of the worker's tree (--budget), as the
	// worker last knew it.
	Budget     *lease.Budget `json:"budget,omitempty"`
	Transcript string        `json:"transcript"`
}

func statusOf(in lease.Info) statusRow {
	r := statusRow{Agent: in.Agent, Pid: in.Pid, Lease: in.State.String(), HeartbeatAgeMs: in.HeartbeatAge.Milliseconds(), Transcript: in.Path}
	if m := in.Meta; m != nil {
		started := m.StartedAt
		r.StartedAt, r.ProgressSeq, r.Session, r.AttemptID, r.Epoch = &started, m.ProgressSeq, m.SessionID, m.AttemptID, m.Epoch
		r.Tokens = attemptTokens(in.Path, m.AttemptID)
		r.Budget = m.Budget
	}
	return r
}

// printStatusJSON prints one JSON document: the list of live workers,
// empty when none runs.
func printStatusJSON(live []lease.Info) error {
	rows := make([]statusRow, 0, len(live))
	for _, in := range live {
		rows = append(rows, statusOf(in))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

func printStatus(live []lease.Info) error {
	if len(live) == 0 {
		_, err := fmt.Println("no live workers")
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tPID\tLEASE\tHEARTBEAT\tRUNNING\tTOKENS\tTRANSCRIPT")
	for _, in := range live {
		r := statusOf(in)
		running, tokens := "-", "-"
		if r.StartedAt != nil {
			running = time.Since(*r.StartedAt).Round(time.Second).String()
		}
		if r.Tokens != nil {
			tokens = tokenCount(*r.Tokens)
		}
		if b := r.Budget; b != nil {
			tokens += fmt.Sprintf(", budget %s of %s left", orchestrator.CompactTokens(max(b.Remaining, 0)), orchestrator.CompactTokens(b.Limit))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", dash(r.Agent), r.Pid, r.Lease, ago(in.HeartbeatAge), running, tokens, r.Transcript)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range live {
		if in.State == lease.Hung {
			fmt.Printf("pid %d is hung: stop it with: ink leases break %s\n", in.Pid, in.Path)
		}
	}
	return nil
}

// attemptTokens sums the usage of the assistant messages written since the
// start of attemptID in the transcript at path. It returns nil when the
// transcript cannot be read cheaply or the attempt has not started there.
func attemptTokens(path, attemptID string) *model.Usage {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxTokenScan {
		return nil
	}
	tr, err := session.Open(path)
	if err != nil {
		return nil
	}
	var sum *model.Usage
	for _, e := range tr.Entries {
		switch {
		case e.Attempt != nil && e.Attempt.Phase == session.PhaseStart && e.Attempt.AttemptID == attemptID:
			sum = &model.Usage{}
		case sum != nil && e.Message != nil && e.Message.Role == model.RoleAssistant && e.Message.Usage != nil:
			*sum = sum.Add(*e.Message.Usage)
		}
	}
	return sum
}

// tokenCount renders usage as "1.2k in / 80 out".
func tokenCount(u model.Usage) string {
	s := fmt.Sprintf("%s in / %s out", orchestrator.CompactTokens(u.Input), orchestrator.CompactTokens(u.Output))
	if u.Incomplete {
		s += " (at least)"
	}
	return s
}
