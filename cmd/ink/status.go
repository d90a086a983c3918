package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/lease"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show live workers: agent, pid, lease state, heartbeat, progress",
		Args:  cobra.NoArgs,
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
				enc := json.NewEncoder(os.Stdout)
				for _, in := range live {
					row := map[string]any{"agent": in.Agent, "pid": in.Pid, "state": in.State.String(), "heartbeatAgeMs": in.HeartbeatAge.Milliseconds(), "transcript": in.Path}
					if in.Meta != nil {
						row["progressSeq"] = in.Meta.ProgressSeq
						row["startedAt"] = in.Meta.StartedAt
						row["session"] = in.Meta.SessionID
					}
					enc.Encode(row)
				}
				return nil
			}
			if len(live) == 0 {
				fmt.Println("no live workers")
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tPID\tLEASE\tHEARTBEAT\tRUNNING\tPROGRESS\tTRANSCRIPT")
			for _, in := range live {
				running, progress := "-", "-"
				if in.Meta != nil {
					running = time.Since(in.Meta.StartedAt).Round(time.Second).String()
					progress = fmt.Sprint(in.Meta.ProgressSeq)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s ago\t%s\t%s\t%s\n", dash(in.Agent), in.Pid, in.State, in.HeartbeatAge.Round(100*time.Millisecond), running, progress, in.Path)
			}
			return tw.Flush()
		},
	}
}
