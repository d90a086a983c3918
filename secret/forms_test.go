package secret

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func TestIsKeyName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY":              true,
		"AWS_SECRET_ACCESS_KEY":          true,
		"AWS_ACCESS_KEY_ID":              true,
		"AWS_SESSION_TOKEN":              true,
		"MINIO_ACCESS_KEY":               true,
		"SECRET_KEY":                     true,
		"client_secret":                  true,
		"CLIENT_SECRET_PROD":             true,
		"GITHUB_TOKEN":                   true,
		"TOKEN":                          true,
		"VAULT_TOKEN_ID":                 true,
		"PGPASSWORD":                     true,
		"DB_PASSWORD_PROD":               true,
		"SMTP_PASSWD":                    true,
		"GOOGLE_APPLICATION_CREDENTIALS": true,
		"AWS_REGION":                     false,
		"AWS_PROFILE":                    false,
		"AWS_CONFIG_FILE":                false,
		"MONKEY":                         false,
		"KEYBOARD":                       false,
		"PATH":                           false,
		"HOME":                           false,
		"GIT_ASKPASS":                    false,
		"SSH_AUTH_SOCK":                  false,
	} {
		if got := IsKeyName(name); got != want {
			t.Errorf("IsKeyName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRedactBase64 encodes a secret inside other bytes at every offset, in
// both alphabets, padded or not, and redacts the result by value and by
// fingerprint: the secret is found every time, and what is left of the
// encoding outside the placeholder is at most the two characters at each
// end that the secret shares with its neighbours.
func TestRedactBase64(t *testing.T) {
	t.Parallel()
	const name, value = "AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	secrets := []Secret{{Name: name, Value: value}}
	redactors := map[string]*Redactor{"value": NewRedactor(secrets, nil), "fingerprint": NewRedactor(nil, Fingerprints(secrets))}
	encs := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw": base64.RawStdEncoding}
	for before := 0; before < 6; before++ {
		for after := 0; after < 4; after++ {
			plain := strings.Repeat("\xfb", before) + value + strings.Repeat("\xff", after)
			for encName, enc := range encs {
				text := "data: " + enc.EncodeToString([]byte(plain)) + " end"
				for how, r := range redactors {
					t.Run(fmt.Sprintf("%s/%s/%d+%d", how, encName, before, after), func(t *testing.T) {
						got, found := r.Redact(text)
						if len(found) != 1 || found[0] != name {
							t.Fatalf("Redact(%q) found %v, want [%s]", text, found, name)
						}
						head, tail, ok := strings.Cut(got, Placeholder(name))
						if !ok || !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) {
							t.Fatalf("Redact(%q) = %q: not one span replaced", text, got)
						}
						// Character j covers bits [6j, 6j+6) of the encoded bytes;
						// the secret's are [8·before, 8·(before+len)).
						encoded := len(text) - len("data: ") - len(" end")
						first, end := (8*before+5)/6, 8*(before+len(value))/6
						left := len(head) - len("data: ") + len(tail) - len(" end")
						if want := first + encoded - end; left != want {
							t.Fatalf("Redact(%q) = %q: %d characters left around the placeholder, want %d (only those shared with the neighbours)", text, got, left, want)
						}
					})
				}
			}
		}
	}
}

// TestFingerprintPrefixes: the prefixes a fingerprint carries — of the
// value and of every base64 form — depend on the value's first prefixLen
// bytes only, so a worker that holds them learns nothing of the rest.
func TestFingerprintPrefixes(t *testing.T) {
	t.Parallel()
	const value = "sk-ant-0123456789abcdef"
	prefixes := func(v string) []string {
		var out []string
		for _, f := range Fingerprints([]Secret{{Name: "K", Value: v}}) {
			out = append(out, f.Prefix)
		}
		return out
	}
	want := prefixes(value)
	if len(want) < 4 {
		t.Fatalf("only %d forms fingerprinted: %v", len(want), want)
	}
	for i := prefixLen; i < len(value); i++ {
		changed := []byte(value)
		changed[i] ^= 0x5a
		if got := prefixes(string(changed)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("changing byte %d changed the prefixes: %v, was %v", i, got, want)
		}
	}
}

func TestForms(t *testing.T) {
	t.Parallel()
	// "abcdefgh" at offsets 0, 1 and 2 of the encoded bytes: each form is
	// the part of a real encoding that only the value decides.
	want := []string{"abcdefgh", "YWJjZGVmZ2", "YWJjZGVmZ2", "FiY2RlZmdo", "FiY2RlZmdo", "hYmNkZWZna", "hYmNkZWZna"}
	if got := Forms("abcdefgh"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Forms = %q, want %q", got, want)
	}
	for i, plain := range []string{"abcdefgh", "xabcdefgh", "xxabcdefgh"} {
		if enc := base64.StdEncoding.EncodeToString([]byte(plain)); !strings.Contains(enc, want[1+2*i]) {
			t.Errorf("%q encodes to %q, which lacks the form %q", plain, enc, want[1+2*i])
		}
	}
	if got := Forms("sk-?>?>?>?>"); got[1] == got[2] {
		t.Errorf("the URL-safe form of a value with '>' is the standard one: %q", got)
	}
}
