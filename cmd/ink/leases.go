package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/lease"
)

func newLeasesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "leases", Short: "List and break transcript leases"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List every transcript lease under $INK_HOME: path, state, pid, agent, heartbeat age",
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
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, in := range infos {
					row := map[string]any{"path": in.Path, "state": in.State.String(), "pid": in.Pid, "agent": in.Agent, "attemptId": in.AttemptID, "epoch": in.Epoch, "heartbeatAgeMs": in.HeartbeatAge.Milliseconds()}
					if in.Err != nil {
						row["error"] = in.Err.Error()
					}
					enc.Encode(row)
				}
				return nil
			}
			if len(infos) == 0 {
				fmt.Println("no leases under " + home)
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STATE\tPID\tAGENT\tHEARTBEAT\tPATH")
			for _, in := range infos {
				state, pid, hb := in.State.String(), "-", "-"
				if in.Err != nil {
					state = "error: " + in.Err.Error()
				}
				if in.State != lease.Free && in.Pid > 0 {
					pid = fmt.Sprint(in.Pid)
					hb = in.HeartbeatAge.Round(100*time.Millisecond).String() + " ago"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", state, pid, dash(in.Agent), hb, in.Path)
			}
			return tw.Flush()
		},
	})
	var force bool
	brk := &cobra.Command{
		Use:   "break PATH",
		Short: "Stop the hung holder of a transcript's lease (SIGTERM, then SIGKILL of its process group)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := filepath.Abs(strings.TrimSuffix(args[0], ".lease"))
			if err != nil {
				return usageErr("%v", err)
			}
			res, err := lease.Break(cmd.Context(), path, lease.BreakOptions{
				Force: force,
				Confirm: func(st lease.Status) bool {
					if !isTerminal(os.Stdin) {
						return false
					}
					pid := 0
					if st.Meta != nil {
						pid = st.Meta.Pid
					}
					fmt.Fprintf(os.Stderr, "break the lease on %s held by pid %d (%s, heartbeat %s ago)? [y/N] ", path, pid, st.State, st.HeartbeatAge.Round(100*time.Millisecond))
					line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
					return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
				},
			})
			if err != nil {
				msg := err.Error()
				if !force && !isTerminal(os.Stdin) && strings.Contains(msg, "confirm") {
					msg += " (not a terminal: pass --force to break without asking)"
				}
				return &exitError{code: exitRefused, msg: msg}
			}
			fmt.Println(res.String())
			return nil
		},
	}
	brk.Flags().BoolVar(&force, "force", false, "do not ask for confirmation")
	cmd.AddCommand(brk)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
