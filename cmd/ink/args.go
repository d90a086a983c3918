package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// Positional argument checks that say what is missing and where to find it,
// instead of cobra's "accepts 1 arg(s), received 0".

// oneArg requires exactly one argument, described as what (e.g. "a session
// id"); find says how to find one (e.g. "list them with `ink sessions ls`").
func oneArg(what, find string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 1:
			return nil
		case 0:
			return usageErr("`%s` needs %s: %s; %s", cmd.CommandPath(), what, strings.TrimSuffix(cmd.UseLine(), " [flags]"), find)
		default:
			return usageErr("`%s` takes %s, got %d arguments (%s); quote an argument that holds spaces", cmd.CommandPath(), what, len(args), strings.Join(args, " "))
		}
	}
}

// atMostOneArg allows no argument or one, described as what.
func atMostOneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) <= 1 {
			return nil
		}
		return usageErr("`%s` takes at most %s, got %d arguments (%s); quote an argument that holds spaces", cmd.CommandPath(), what, len(args), strings.Join(args, " "))
	}
}

// noArgs refuses any argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := "see `" + cmd.CommandPath() + " --help`"
	if cmd.HasSubCommands() {
		hint = "its commands are listed by `" + cmd.CommandPath() + " --help`"
	}
	return usageErr("`%s` takes no arguments, got %q; %s", cmd.CommandPath(), strings.Join(args, " "), hint)
}
