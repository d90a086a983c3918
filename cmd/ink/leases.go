package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/lease"
)

// HeartbeatEnv names the environment variable that sets the lease heartbeat
// interval of the workers an `ink run` or `ink task` starts (default 1s).
// A held lease whose heartbeat is older than 3 × interval + 2s is hung.
const HeartbeatEnv = "INK_HEARTBEAT"

// Bounds of INK_HEARTBEAT: beats faster than minHeartbeat cost more than
// they tell; slower than maxHeartbeat and a hung worker goes unseen too long.
const (
	minHeartbeat = 50 * time.Millisecond
	maxHeartbeat = time.Minute
)

// heartbeatInterval reads INK_HEARTBEAT; 0 (unset) means the default.
func heartbeatInterval() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(HeartbeatEnv))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minHeartbeat || d > maxHeartbeat {
		return 0, usageErr("%s=%q is not a heartbeat interval between %s and %s (for example 500ms); unset it to use the default %s",
			HeartbeatEnv, v, minHeartbeat, maxHeartbeat, lease.DefaultHeartbeat)
	}
	return d, nil
}

const leasesLong = `Every transcript is written by one process at a time: the one holding its
lease, a lock on "<transcript>.lease" whose holder is named in
"<transcript>.lease.json" and refreshes a heartbeat while it runs.

States:
  free  nobody holds it (a dead holder frees it at once)
  held  a live process holds it and its heartbeat is fresh
  hung  a process holds it but its heartbeat is older than 3 × interval + 2s

The heartbeat interval is 1s; ` + HeartbeatEnv + `=DURATION (e.g. 200ms) sets it for
the workers of an ink run or ink task started with it. Sessions must live on
a local disk: leases do not work over NFS.`

func newLeasesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "leases", Short: "List and break transcript leases", Long: leasesLong}
	var all bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the live transcript leases under $INK_HOME (--all: free ones too): state, pid, agent, heartbeat age, path",
		Long: leasesLong + `

ink leases ls lists the leases somebody holds (held or hung); --all lists the
free ones too: every transcript ink ever ran keeps its lease file, free once
its writer ended. A lease that cannot be read (its lease file is a symlink or
a directory, say) is always listed, with its error, and ink leases ls then
exits 1.`,
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
			shown, free := infos, 0
			if !all {
				shown, free = liveLeases(infos)
			}
			if g.json {
				err = printLeasesJSON(shown)
			} else {
				err = printLeases(home, shown, free)
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write the listing: %v", err)}
			}
			if bad := countErrors(infos); bad > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d lease(s) could not be read; each error row says what is wrong and how to fix it", bad)}
			}
			return nil
		},
	}
	ls.Flags().BoolVar(&all, "all", false, "also list free leases (of transcripts nobody writes now)")
	cmd.AddCommand(uses(ls, "json"), uses(newLeasesBreakCmd(g), "json"))
	return cmd
}

// liveLeases keeps the leases somebody holds and those that cannot be read,
// and counts the free ones it leaves out.
func liveLeases(infos []lease.Info) (live []lease.Info, free int) {
	for _, in := range infos {
		if in.Err == nil && in.State == lease.Free {
			free++
			continue
		}
		live = append(live, in)
	}
	return live, free
}

// leaseRow is one lease as `ink leases ls --json` prints it.
type leaseRow struct {
	Path           string `json:"path"`
	State          string `json:"state"`
	Pid            int    `json:"pid,omitempty"`
	Agent          string `json:"agent,omitempty"`
	Session        string `json:"session,omitempty"`
	AttemptID      string `json:"attemptId,omitempty"`
	Epoch          int64  `json:"epoch,omitempty"`
	HeartbeatAgeMs *int64 `json:"heartbeatAgeMs,omitempty"`
	// HeartbeatIntervalMs is the interval the holder beats at; the lease
	// is hung once its heartbeat is 3 × this + 2s old.
	HeartbeatIntervalMs int64  `json:"heartbeatIntervalMs,omitempty"`
	ProgressSeq         int64  `json:"progressSeq,omitempty"`
	Error               string `json:"error,omitempty"`
}

func rowOf(in lease.Info) leaseRow {
	r := leaseRow{Path: in.Path, State: in.State.String()}
	if in.Err != nil {
		r.State, r.Error = "error", in.Err.Error()
		return r
	}
	if m := in.Meta; m != nil {
		age := in.HeartbeatAge.Milliseconds()
		r.Pid, r.Agent, r.Session, r.AttemptID, r.Epoch = m.Pid, m.Agent, m.SessionID, m.AttemptID, m.Epoch
		r.HeartbeatAgeMs, r.HeartbeatIntervalMs, r.ProgressSeq = &age, m.HeartbeatInterval().Milliseconds(), m.ProgressSeq
	}
	return r
}

func printLeasesJSON(infos []lease.Info) error {
	enc := json.NewEncoder(os.Stdout)
	for _, in := range infos {
		if err := enc.Encode(rowOf(in)); err != nil {
			return err
		}
	}
	return nil
}

// printLeases writes the lease table; free counts the free leases left
// out of infos (without --all).
func printLeases(home string, infos []lease.Info, free int) error {
	hidden := ""
	if free > 0 {
		hidden = fmt.Sprintf("%d free (of transcripts nobody writes now); `ink leases ls --all` lists them", free)
	}
	if len(infos) == 0 {
		msg := "no leases under " + home
		if free > 0 {
			msg = "no live leases under " + home + "; " + hidden
		}
		_, err := fmt.Println(msg)
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tPID\tAGENT\tEPOCH\tHEARTBEAT\tPATH")
	for _, in := range infos {
		if in.Err != nil {
			fmt.Fprintf(tw, "error\t-\t-\t-\t-\t%s\n", in.Path)
			continue
		}
		pid, agent, epoch, hb := "-", "-", "-", "-"
		if m := in.Meta; m != nil {
			epoch = fmt.Sprint(m.Epoch)
			if in.State != lease.Free {
				pid, agent = fmt.Sprint(m.Pid), dash(m.Agent)
				hb = ago(in.HeartbeatAge)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.State, pid, agent, epoch, hb, in.Path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range infos {
		if in.Err != nil {
			fmt.Printf("error: %s: %v\n", in.Path, in.Err)
		}
	}
	if hidden != "" {
		fmt.Println("and " + hidden)
	}
	return nil
}

func countErrors(infos []lease.Info) int {
	n := 0
	for _, in := range infos {
		if in.Err != nil {
			n++
		}
	}
	return n
}

func newLeasesBreakCmd(g *globals) *cobra.Command {
	var force bool
	brk := &cobra.Command{
		Use:   "break PATH",
		Short: "Stop the hung holder of a transcript's lease (SIGTERM, then SIGKILL of its process group)",
		Long: `Break frees the lease of a transcript (PATH, or its .lease file) whose holder
is hung: it sends SIGTERM (and SIGCONT, so a stopped holder can act on it)
to the holder's process group, waits 3s for the lock to free, then sends
SIGKILL. It refuses a healthy or free lease and a holder on another host,
asks before it signals anything (--force: do not ask; needed when stdin is
not a terminal), and deletes no file. Find hung leases with: ink leases ls`,
		Args: oneArg("the path of a transcript (or of its .lease file)", "find them with `ink leases ls`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := leaseTarget(args[0])
			if err != nil {
				return err
			}
			noTTY := false
			res, err := lease.Break(cmd.Context(), path, lease.BreakOptions{
				Force: force,
				Confirm: func(st lease.Status) bool {
					if !isTerminal(os.Stdin) {
						noTTY = true
						return false
					}
					fmt.Fprintf(os.Stderr, "break the lease on %s held by pid %d (%s, heartbeat %s)? [y/N] ",
						path, st.Meta.Pid, st.State, ago(st.HeartbeatAge))
					line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
					return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
				},
			})
			switch {
			case err == nil:
				if g.json {
					return printJSON(breakJSON(res))
				}
				fmt.Println(res.String())
				return nil
			case errors.Is(err, lease.ErrRefused):
				msg := err.Error()
				if noTTY {
					msg += "; stdin is not a terminal, so ink cannot ask: pass --force to break it without asking"
				}
				return &exitError{code: exitRefused, msg: msg}
			case errors.Is(err, lease.ErrBadLeaseFile):
				return &exitError{code: exitUsage, msg: err.Error()}
			default:
				return &exitError{code: exitFailed, msg: err.Error()}
			}
		},
	}
	brk.Flags().BoolVar(&force, "force", false, "do not ask for confirmation")
	return brk
}

// leaseTarget turns the PATH argument of `ink leases break` (a transcript or
// its .lease file) into an absolute transcript path that has a lease.
func leaseTarget(arg string) (string, error) {
	if strings.TrimSpace(arg) == "" {
		return "", usageErr("the path is blank; pass a transcript path as ink leases ls shows it")
	}
	path, err := filepath.Abs(strings.TrimSuffix(arg, ".lease"))
	if err != nil {
		return "", usageErr("%s: %v", arg, err)
	}
	if _, err := os.Lstat(lease.FilePath(path)); errors.Is(err, fs.ErrNotExist) {
		return "", usageErr("no lease at %s: it is not a transcript ink has run; list leases with: ink leases ls", path)
	}
	return path, nil
}

// ago renders a heartbeat age for people: "0.4s ago", "3m5s ago".
func ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs ago", d.Seconds())
	}
	return d.Round(time.Second).String() + " ago"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// breakJSON is what `ink leases break --json` prints.
func breakJSON(r lease.BreakResult) map[string]any {
	signals := make([]string, 0, len(r.Signals))
	for _, s := range r.Signals {
		signals = append(signals, unix.SignalName(s))
	}
	out := map[string]any{"path": r.Path, "state": r.Before.State.String(), "pid": r.Pid, "signals": signals, "freed": r.Freed, "waitedMs": r.Waited.Milliseconds()}
	if r.Pgid != 0 {
		out["pgid"] = r.Pgid
	}
	return out
}
