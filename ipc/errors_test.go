package ipc

import (
	"errors"
	"testing"
)

func TestAsProtocolMismatch(t *testing.T) {
	t.Parallel()
	other := errors.New("plugin exited before we could connect")
	tests := []struct {
		name   string
		err    error
		worker int
	}{
		{"go-plugin negotiation", errors.New("incompatible API version with plugin. Plugin version: 2, Client versions: [1]"), 2},
		{"future worker", errors.New("incompatible API version with plugin. Plugin version: 17, Client versions: [1]"), 17},
		{"unrelated error", other, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := asProtocolMismatch(tt.err, 1)
			var m *ProtocolMismatchError
			if tt.worker == 0 {
				if got != tt.err {
					t.Fatalf("asProtocolMismatch(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if !errors.As(got, &m) || m.Worker != tt.worker || m.Host != 1 {
				t.Fatalf("asProtocolMismatch(%v) = %v, want worker %d host 1", tt.err, got, tt.worker)
			}
		})
	}
	if asProtocolMismatch(nil, 1) != nil {
		t.Error("asProtocolMismatch(nil) is not nil")
	}
}
