package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    sandbox.Mode
		wantErr string
	}{
		{in: "read-only", want: sandbox.ReadOnly},
		{in: "workspace-write", want: sandbox.WorkspaceWrite},
		{in: "danger-full-access", want: sandbox.DangerFullAccess},
		{in: "  Read-Only\n", want: sandbox.ReadOnly},
		{in: "readonly", wantErr: `unknown sandbox mode "readonly"; pick one of read-only, workspace-write, danger-full-access`},
		{in: "full", wantErr: `unknown sandbox mode "full"; pick one of read-only, workspace-write, danger-full-access`},
		{in: " ", wantErr: "sandbox mode is empty; pick one of read-only, workspace-write, danger-full-access"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := sandbox.ParseMode(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParseMode(%q) = %q, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseMode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// A mode round-trips through JSON by name, and a bad name in a file is an
// error when it is read, not later.
func TestModeJSON(t *testing.T) {
	t.Parallel()
	type record struct {
		Sandbox sandbox.Mode `json:"sandbox"`
	}
	b, err := json.Marshal(record{sandbox.WorkspaceWrite})
	if err != nil || string(b) != `{"sandbox":"workspace-write"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var r record
	if err := json.Unmarshal([]byte(`{"sandbox":"read-only"}`), &r); err != nil || r.Sandbox != sandbox.ReadOnly {
		t.Fatalf("Unmarshal = %+v, %v", r, err)
	}
	err = json.Unmarshal([]byte(`{"sandbox":"none"}`), &r)
	if err == nil || !strings.Contains(err.Error(), `unknown sandbox mode "none"`) {
		t.Fatalf("Unmarshal of a bad mode: %v", err)
	}
	if _, err := json.Marshal(record{sandbox.Mode("bogus")}); err == nil {
		t.Fatal("an invalid mode was written")
	}
}

func TestDefaultMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tools []string
		want  sandbox.Mode
	}{
		{[]string{"read", "grep", "find", "ls", "edit", "write", "bash"}, sandbox.WorkspaceWrite},
		{[]string{"read", "edit", "bash"}, sandbox.WorkspaceWrite},
		{[]string{"write", "bash"}, sandbox.WorkspaceWrite},
		{[]string{"read", "grep", "bash"}, sandbox.ReadOnly},
		{nil, sandbox.ReadOnly},
	}
	for _, tc := range tests {
		if got := sandbox.DefaultMode(tc.tools); got != tc.want {
			t.Errorf("DefaultMode(%v) = %s, want %s", tc.tools, got, tc.want)
		}
	}
}

func TestConfined(t *testing.T) {
	t.Parallel()
	for m, want := range map[sandbox.Mode]bool{
		sandbox.ReadOnly: true, sandbox.WorkspaceWrite: true, sandbox.DangerFullAccess: false, "": false, "bogus": false,
	} {
		if got := m.Confined(); got != want {
			t.Errorf("%q.Confined() = %v, want %v", m, got, want)
		}
	}
}
