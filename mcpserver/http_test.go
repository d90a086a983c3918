package mcpserver

import (
	"strings"
	"testing"
)

func TestListenAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		remote  bool
		want    string
		refusal string
	}{
		{"8765", false, "127.0.0.1:8765", ""},
		{"127.0.0.1:0", false, "127.0.0.1:0", ""},
		{"localhost:8765", false, "localhost:8765", ""},
		{"[::1]:8765", false, "[::1]:8765", ""},
		{"0.0.0.0:8765", false, "", "listens on 0.0.0.0, beyond this machine"},
		{":8765", false, "", "listens on every interface, beyond this machine"},
		{"192.168.1.5:80", false, "", "add --allow-remote if you mean it"},
		{"example.com:80", false, "", "beyond this machine"},
		{"0.0.0.0:8765", true, "0.0.0.0:8765", ""},
		{"nonsense", false, "", "is not HOST:PORT"},
		{"127.0.0.1:http", false, "", `port "http" is not a number`},
		{"127.0.0.1:70000", false, "", "from 0 to 65535"},
	} {
		got, err := ListenAddr(tc.addr, tc.remote)
		if tc.refusal != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("ListenAddr(%q, %v) = %q, %v; want %q", tc.addr, tc.remote, got, err, tc.refusal)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ListenAddr(%q, %v) = %q, %v; want %q", tc.addr, tc.remote, got, err, tc.want)
		}
	}
}
