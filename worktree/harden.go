package worktree

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ink's git never runs a program that configuration names. Three layers
// keep it so:
//
//  1. In ink's worktrees git runs against the worktree's own git directory,
//     whose config ink wrote and the child cannot write (layout.go), never
//     through the worktree's .git link, so the repository configuration a
//     child controls never reaches ink's git at all.
//  2. Every call pins the settings that name a program or turn one on
//     (fixedPins), as command-line configuration, which beats every config
//     file, and runs with --no-pager and a scrubbed environment.
//  3. Driver settings have names the repository chooses (filter.<name>.*,
//     merge.<name>.driver, diff.<name>.textconv). Before a call on the
//     user's repository that may read file contents, ink lists the drivers
//     the repository's own configuration defines and pins each to nothing
//     (driverPins); drivers of the user's global and system configuration
//     stay, as they are the user's.

// fixedPins are the settings every git call of ink runs with: no fsmonitor
// hook, no hooks, no pager, editor, ssh or proxy command, no credential
// helper, no transport at all (ink's git never talks to a remote), no
// signing or signature checks (gpg.program), no submodule recursion, no
// automatic gc or maintenance (which would run hooks and inherit the
// repository lock), no external diff.
var fixedPins = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", ":"},
	{"sequence.editor", ":"},
	{"core.sshCommand", ""},
	{"core.gitProxy", ""},
	{"core.askPass", ""},
	{"core.alternateRefsCommand", ""},
	{"credential.helper", ""},
	{"protocol.allow", "never"},
	{"uploadpack.packObjectsHook", ""},
	{"diff.external", ""},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"merge.verifySignatures", "false"},
	{"log.showSignature", "false"},
	{"submodule.recurse", "false"},
	{"status.submoduleSummary", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// keptGitEnv are the GIT_* variables ink's git keeps from ink's own
// environment: the identity the user gave, and which global and system
// config files are the user's. Every other GIT_* variable (GIT_DIR,
// GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, GIT_EXTERNAL_DIFF, GIT_SSH,
// GIT_PAGER, GIT_EXEC_PATH, …) is dropped.
var keptGitEnv = map[string]bool{
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
	"GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true, "GIT_CONFIG_NOSYSTEM": true,
}

// hardenedEnv is the environment of one git call: ink's environment
// without the variables that would point git elsewhere or make it run
// something (keptGitEnv aside), without the locale, and with pins as
// command-line configuration (GIT_CONFIG_COUNT/KEY/VALUE, which, unlike
// -c, carry any key verbatim and reach every git process the call starts).
// Replace objects are ignored, so that ink sees the history as it is
// stored. No transport is allowed whatever any configuration says
// (GIT_ALLOW_PROTOCOL empty: the pinned protocol.allow is only a default,
// which a repository's protocol.ext.allow beats, and an ext:: URL runs a
// shell command), and a partial clone never fetches a missing object from
// its promisor remote (GIT_NO_LAZY_FETCH), which git would otherwise do
// in the middle of a checkout or a diff.
func hardenedEnv(pins [][2]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_") && !keptGitEnv[k]:
		case k == "LC_ALL" || k == "LANG" || k == "LANGUAGE":
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1", "GIT_PAGER=cat",
		"GIT_ALLOW_PROTOCOL=", "GIT_NO_LAZY_FETCH=1",
		"GIT_CONFIG_COUNT="+strconv.Itoa(len(pins)))
	for i, p := range pins {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+p[0], "GIT_CONFIG_VALUE_"+n+"="+p[1])
	}
	return env
}

// pins returns the configuration c runs with: fixedPins, plus the drivers
// of the repository's own configuration when c may read file contents of
// a repository whose configuration ink did not write.
func (c gitCall) pins(ctx context.Context) ([][2]string, error) {
	if (c.in != nil && c.in.sealed) || inert(c.args) {
		return fixedPins, nil
	}
	drivers, err := c.repoDrivers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the repository's configuration: %w", err)
	}
	return append(append([][2]string(nil), fixedPins...), drivers...), nil
}

// inert reports whether a git command never reads file contents through
// attributes, so no filter, merge or diff driver can run in it.
func inert(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "rev-parse", "symbolic-ref", "update-ref", "reflog", "rev-list", "merge-base",
		"for-each-ref", "show-ref", "config", "var", "index-pack", "pack-objects",
		"check-ignore", "check-attr", "ls-tree", "write-tree",
		"commit-tree", "count-objects", "fsck", "init", "version":
		return true
	case "worktree":
		return len(args) > 1 && args[1] != "add"
	}
	return false
}

// driverKeys are the settings, per driver name, that name a program, and
// what ink pins them to: an empty command, which git refuses to run (a
// filter is skipped; a merge or diff that needs the driver fails and says
// so) instead of running anything.
var driverKeys = map[string][][2]string{
	"filter": {{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}},
	"merge":  {{"driver", ""}},
	"diff":   {{"textconv", ""}, {"command", ""}},
}

// driver is one driver the repository's own configuration defines.
type driver struct{ kind, name string }

// repoDrivers lists the driver settings that the repository's own
// configuration (scopes local and worktree, with what they include)
// defines, pinned as driverKeys says.
func (c gitCall) repoDrivers(ctx context.Context) ([][2]string, error) {
	ds, err := configDrivers(ctx, gitCall{dir: c.dir, in: c.in, ceiling: c.ceiling})
	if err != nil {
		return nil, err
	}
	var pins [][2]string
	for _, d := range ds {
		for _, k := range driverKeys[d.kind] {
			pins = append(pins, [2]string{d.kind + "." + d.name + "." + k[0], k[1]})
		}
	}
	return pins, nil
}

// configDrivers lists the drivers the configuration of the repository
// where at runs defines in its own scopes.
func configDrivers(ctx context.Context, at gitCall) ([]driver, error) {
	at.read = true
	at.args = []string{"config", "--list", "--show-scope", "-z"}
	out, err := at.once(ctx)
	if err != nil {
		return nil, err
	}
	return parseDrivers(out), nil
}

// parseDrivers picks the drivers of the local and worktree scopes out of
// `git config --list --show-scope -z`, each once, in order.
func parseDrivers(out string) []driver {
	var ds []driver
	f := strings.Split(out, "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		scope, entry := f[i], f[i+1]
		if scope != "local" && scope != "worktree" {
			continue
		}
		key, _, _ := strings.Cut(entry, "\n")
		section, rest, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot <= 0 {
			continue
		}
		kind := strings.ToLower(section)
		keys, ok := driverKeys[kind]
		if !ok {
			continue
		}
		d := driver{kind: kind, name: rest[:dot]}
		variable := strings.ToLower(rest[dot+1:])
		if slices.ContainsFunc(keys, func(k [2]string) bool { return k[0] == variable }) && !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	return ds
}
