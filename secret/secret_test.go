package secret

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFromEnviron(t *testing.T) {
	t.Parallel()
	env := []string{
		"ANTHROPIC_API_KEY=sk-ant-0123456789abcdef",
		"OPENAI_API_KEY=sk-proj-abcdefghijklmnop",
		"GITHUB_TOKEN=ghp_0123456789",
		"SHORT_API_KEY=abc", // too short to redact safely
		"HTTPS_PROXY=http://alice:s3cretpassword@proxy.example:3128",
		"OPENAI_BASE_URL=https://api.example/v1?api_key=querysecret123",
		"GIT_URL=https://ghtoken123456@github.com/x/y",
		"PATH=/usr/bin:/bin",
		"HOME=/home/alice",
		"DUP_API_KEY=sk-ant-0123456789abcdef", // same value as another: listed once
	}
	got := FromEnviron(env)
	want := []Secret{
		{Name: "ANTHROPIC_API_KEY", Value: "sk-ant-0123456789abcdef"},
		{Name: "GITHUB_TOKEN", Value: "ghp_0123456789"},
		{Name: "GIT_URL credentials", Value: "ghtoken123456"},
		{Name: "HTTPS_PROXY password", Value: "s3cretpassword"},
		{Name: "OPENAI_API_KEY", Value: "sk-proj-abcdefghijklmnop"},
		{Name: "OPENAI_BASE_URL api_key", Value: "querysecret123"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromEnviron:\n got %+v\nwant %+v", got, want)
	}
}

func TestRedactByValueAndFingerprint(t *testing.T) {
	t.Parallel()
	own := []Secret{{Name: "OPENAI_API_KEY", Value: "sk-proj-abcdefghijklmnop"}}
	other := []Secret{{Name: "ANTHROPIC_API_KEY", Value: "sk-ant-0123456789abcdef"}}
	r := NewRedactor(own, Fingerprints(other))
	for _, tc := range []struct {
		name, in, want string
		found          []string
	}{
		{"nothing", "plain text with sk-ant- but no key", "plain text with sk-ant- but no key", nil},
		{"own key", "key=sk-proj-abcdefghijklmnop.", "key=[redacted:OPENAI_API_KEY].", []string{"OPENAI_API_KEY"}},
		{"other key twice", "A=sk-ant-0123456789abcdef\nB=sk-ant-0123456789abcdef", "A=[redacted:ANTHROPIC_API_KEY]\nB=[redacted:ANTHROPIC_API_KEY]", []string{"ANTHROPIC_API_KEY"}},
		{"near miss", "sk-ant-0123456789abcdeX", "sk-ant-0123456789abcdeX", nil},
		{"both", "sk-ant-0123456789abcdef sk-proj-abcdefghijklmnop", "[redacted:ANTHROPIC_API_KEY] [redacted:OPENAI_API_KEY]", []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}},
		{"prefix at end", "tail sk-a", "tail sk-a", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := r.Redact(tc.in)
			if got != tc.want || !reflect.DeepEqual(found, tc.found) {
				t.Fatalf("Redact(%q) = %q, %v; want %q, %v", tc.in, got, found, tc.want, tc.found)
			}
		})
	}
	var nilR *Redactor
	if s, f := nilR.Redact("sk-ant-0123456789abcdef"); s != "sk-ant-0123456789abcdef" || f != nil {
		t.Fatalf("nil redactor changed text: %q %v", s, f)
	}
}

func TestFingerprintHidesValue(t *testing.T) {
	t.Parallel()
	v := "sk-ant-0123456789abcdef"
	for _, f := range Fingerprints([]Secret{{Name: "K", Value: v}}) {
		if strings.Contains(f.Prefix+f.SHA256+f.Name, v[prefixLen:]) {
			t.Fatalf("fingerprint %+v carries the secret", f)
		}
	}
}

// TestScrubEnvironAndHarden runs in a child process: it blanks a planted key
// in its own kernel-visible environment, keeps using it through os.Getenv,
// and becomes non-dumpable.
func TestScrubEnvironAndHarden(t *testing.T) {
	const key = "sk-ant-scrubme-0123456789"
	if os.Getenv("INK_SECRET_HELPER") == "1" {
		secrets := FromEnviron(os.Environ())
		n, err := ScrubEnviron(secrets)
		if err != nil || n != 1 {
			t.Fatalf("ScrubEnviron = %d, %v; want 1 value blanked", n, err)
		}
		data, err := os.ReadFile("/proc/self/environ")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), key) {
			t.Fatal("/proc/self/environ still shows the key")
		}
		if !strings.Contains(string(data), "INK_SECRET_HELPER=1") {
			t.Fatal("ScrubEnviron blanked a variable that holds no secret")
		}
		if os.Getenv("ANTHROPIC_API_KEY") != key {
			t.Fatal("the process lost its own key")
		}
		if err := Harden(); err != nil {
			t.Fatal(err)
		}
		if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
			t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0", d, err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestScrubEnvironAndHarden$", "-test.count=1")
	cmd.Env = []string{"INK_SECRET_HELPER=1", "ANTHROPIC_API_KEY=" + key, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

func TestLogHandlerRedacts(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	r := NewRedactor([]Secret{{Name: "K_API_KEY", Value: "sk-test-0123456789"}}, nil)
	log := slog.New(LogHandler(slog.NewJSONHandler(&b, nil), r)).With("fixed", "a sk-test-0123456789")
	log.Info("sent sk-test-0123456789", "err", errors.New("bad key sk-test-0123456789"), slog.Group("g", "v", "sk-test-0123456789"))
	out := b.String()
	if strings.Contains(out, "sk-test-0123456789") || strings.Count(out, "[redacted:K_API_KEY]") != 4 {
		t.Fatalf("log line not redacted: %s", out)
	}
}
