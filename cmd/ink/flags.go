package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The shared flags are persistent flags of the root command, so cobra lets
// every command parse them. A command that has no use for one must not
// accept it in silence: `ink demo --model x` would look as if it ran on x.
// Each command says which shared flags it reads (uses); the root refuses
// any other shared flag given to it (checkSharedFlags) and leaves it out of
// its help. A command that says nothing takes every shared flag.

// flagsAnnotation is the cobra annotation that lists the shared flags a
// command reads, comma-separated.
const flagsAnnotation = "ink.sharedFlags"

// Groups of shared flags, by what a command does with them.
var (
	// supervisorFlags are the flags of a command that runs agents.
	supervisorFlags = []string{"model", "base-url", "cwd", "json", "max-parallel", "max-depth", "task-timeout",
		"sandbox", "writable", "network", "allow-git-writes", "launcher", "ship-includes", "max-turns", "context-window", "budget", "verbose",
		"kube-context", "kube-namespace", "kube-image", "kube-connect", "kube-cpu", "kube-memory", "kube-start-timeout"}
	// lookFlags are the flags of a command that reads this directory's state.
	lookFlags = []string{"cwd", "json"}
)

// uses records on cmd the shared flags it reads and returns cmd.
func uses(cmd *cobra.Command, flags ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[flagsAnnotation] = strings.Join(flags, ",")
	return cmd
}

// usedFlags reports the shared flags cmd reads; ok is false when cmd does
// not say (it then takes them all).
func usedFlags(cmd *cobra.Command) (set map[string]bool, ok bool) {
	list, ok := cmd.Annotations[flagsAnnotation]
	if !ok {
		return nil, false
	}
	set = map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		if f != "" {
			set[f] = true
		}
	}
	return set, true
}

// checkSharedFlags refuses a shared flag given to a command that does not
// read it, naming the commands that do.
func checkSharedFlags(cmd *cobra.Command) error {
	used, ok := usedFlags(cmd)
	if !ok {
		return nil
	}
	var bad error
	cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if bad != nil || used[f.Name] || !cmd.Flags().Changed(f.Name) {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + "/" + name
		}
		msg := fmt.Sprintf("%s has no effect on `%s`", name, cmd.CommandPath())
		if why := notApplicable[cmd.Name()+" "+f.Name]; why != "" {
			msg += " (" + why + ")"
		}
		if takers := commandsTaking(cmd.Root(), f.Name); len(takers) > 0 {
			msg += "; it is for " + strings.Join(takers, ", ")
		}
		bad = usageErr("%s. Drop it", msg)
	})
	return bad
}

// notApplicable explains, for a command and a shared flag it refuses, why
// the flag means nothing there.
var notApplicable = map[string]string{
	"demo model":        "the demo always runs ink's offline script model, so that it needs no key",
	"demo base-url":     "the demo always runs ink's offline script model, so that it needs no key",
	"demo session":      "the demo starts fresh sessions in a scratch directory",
	"demo cwd":          "the demo works in a scratch repository of its own",
	"demo max-parallel": "the demo's three children always run at once",
	"task session":      "to continue a child use --resume ID, and --parent SESSION names the session that owns it",
}

// commandsTaking lists the runnable commands that read shared flag name.
func commandsTaking(root *cobra.Command, name string) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if c.Runnable() && c != root {
			if used, ok := usedFlags(c); ok && used[name] {
				out = append(out, c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// helpShowingUsedFlags wraps a help function so that a command's help
// lists only the shared flags it reads.
func helpShowingUsedFlags(help func(*cobra.Command, []string)) func(*cobra.Command, []string) {
	return func(cmd *cobra.Command, args []string) {
		used, ok := usedFlags(cmd)
		if !ok {
			help(cmd, args)
			return
		}
		var hidden []*pflag.Flag
		cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !used[f.Name] && !f.Hidden {
				f.Hidden = true
				hidden = append(hidden, f)
			}
		})
		defer func() {
			for _, f := range hidden {
				f.Hidden = false
			}
		}()
		help(cmd, args)
	}
}

// givenBool is a boolean flag that remembers whether it was given, so
// that --network=false (a cut asked for by name) differs from no flag.
type givenBool struct {
	value, given bool
}

func (b *givenBool) String() string { return strconv.FormatBool(b.value) }

func (b *givenBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	b.value, b.given = v, true
	return nil
}

func (b *givenBool) Type() string { return "bool" }
