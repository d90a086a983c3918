package sandbox_test

import (
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// TestCheck reports what this machine offers; whether that is enough is
// what requireLandlock decides for the confinement tests.
func TestCheck(t *testing.T) {
	t.Parallel()
	err := sandbox.Check()
	t.Logf("Linux Landlock ABI %d; sandbox.Check() = %v", sandbox.ABI(), err)
	if err == nil {
		return
	}
	ue, ok := err.(*sandbox.UnavailableError)
	if !ok {
		t.Fatalf("Check returned %T, want *sandbox.UnavailableError", err)
	}
	if ue.Kernel == "" || ue.ABI >= sandbox.MinABI {
		t.Fatalf("UnavailableError %+v does not say why", ue)
	}
}

func TestUnavailableMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *sandbox.UnavailableError
		want string
	}{
		{&sandbox.UnavailableError{Kernel: "5.10.0-28-amd64"},
			"Landlock is not available: Linux 5.10.0-28-amd64 was built without it or started with it disabled"},
		{&sandbox.UnavailableError{Kernel: "5.15.0-91-generic", ABI: 1},
			"Landlock is too old: Linux 5.15.0-91-generic offers Landlock ABI 1, and the bash sandbox needs ABI 3 (Linux 6.2 or newer)"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("message = %q, want it to start with %q", got, tc.want)
		}
	}
}

// TestDecide covers both kinds of machine: with Landlock the requested
// mode holds; without it a default is dropped with one warning and an
// explicit request is refused, saying why and what to do.
func TestDecide(t *testing.T) {
	t.Parallel()
	missing := &sandbox.UnavailableError{Kernel: "5.15.0", ABI: 1}
	tests := []struct {
		name      string
		mode      sandbox.Mode
		explicit  bool
		available error
		effective sandbox.Mode
		warning   []string
		refusal   []string
	}{
		{name: "landlock, default", mode: sandbox.WorkspaceWrite, effective: sandbox.WorkspaceWrite},
		{name: "landlock, explicit read-only", mode: sandbox.ReadOnly, explicit: true, effective: sandbox.ReadOnly},
		{name: "no landlock, default", mode: sandbox.WorkspaceWrite, available: missing, effective: sandbox.DangerFullAccess,
			warning: []string{"Linux 5.15.0 offers Landlock ABI 1", "bash runs without a sandbox", "--sandbox danger-full-access"}},
		{name: "no landlock, default read-only", mode: sandbox.ReadOnly, available: missing, effective: sandbox.DangerFullAccess,
			warning: []string{"the read-only default is dropped"}},
		{name: "no landlock, explicit", mode: sandbox.WorkspaceWrite, explicit: true, available: missing,
			refusal: []string{"cannot run bash in the workspace-write sandbox", "Linux 5.15.0 offers Landlock ABI 1", "pick --sandbox danger-full-access to run bash unconfined"}},
		{name: "no landlock, explicit danger", mode: sandbox.DangerFullAccess, explicit: true, available: missing, effective: sandbox.DangerFullAccess},
		{name: "not a mode", mode: "loose", refusal: []string{`unknown sandbox mode "loose"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := sandbox.Decide(tc.mode, tc.explicit, tc.available)
			if tc.refusal != nil {
				if err == nil {
					t.Fatalf("Decide = %+v, want a refusal", d)
				}
				for _, w := range tc.refusal {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Requested != tc.mode || d.Effective != tc.effective {
				t.Errorf("Decide = %+v, want requested %s, effective %s", d, tc.mode, tc.effective)
			}
			if (d.Warning != "") != (tc.warning != nil) {
				t.Errorf("warning = %q, want one: %v", d.Warning, tc.warning != nil)
			}
			for _, w := range tc.warning {
				if !strings.Contains(d.Warning, w) {
					t.Errorf("warning %q does not say %q", d.Warning, w)
				}
			}
		})
	}
}
