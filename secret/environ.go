package secret

import (
	"net/url"
	"sort"
	"strings"
)

// Secret is one configured secret: the name it is shown under in a
// redaction ("ANTHROPIC_API_KEY", "HTTPS_PROXY password") and its value.
type Secret struct {
	Name  string
	Value string
}

// MinLen is the shortest value treated as a secret: shorter values ("1",
// "true") would redact ordinary text and protect nothing.
const MinLen = 8

// awsSettings are the AWS_* variables that configure a tool rather than
// hold a credential: redacting a region name from every text would only
// mangle ordinary output.
var awsSettings = map[string]bool{
	"AWS_REGION": true, "AWS_DEFAULT_REGION": true, "AWS_PROFILE": true, "AWS_DEFAULT_PROFILE": true,
	"AWS_DEFAULT_OUTPUT": true, "AWS_CONFIG_FILE": true, "AWS_SHARED_CREDENTIALS_FILE": true,
	"AWS_CA_BUNDLE": true, "AWS_PAGER": true, "AWS_SDK_LOAD_CONFIG": true,
}

// urlSecretParams are query parameters that carry a credential.
var urlSecretParams = []string{"key", "api-key", "api_key", "apikey", "token", "access_token", "auth"}

// IsKeyName reports whether an environment variable of this name holds a
// key, token, password or credential as its whole value. Case does not
// matter, and a word may also begin the name (TOKEN, SECRET_KEY):
//
//   - *_KEY (ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY, *_ACCESS_KEY);
//   - *_SECRET* and *_TOKEN* (CLIENT_SECRET, GITHUB_TOKEN, *_TOKEN_ID);
//   - *PASSWORD* and *PASSWD* (PGPASSWORD, DB_PASSWORD_PROD);
//   - *_CREDENTIALS (GOOGLE_APPLICATION_CREDENTIALS);
//   - AWS_*, except the settings that name a region, a profile, an output
//     format, a pager or a file (AWS_REGION, AWS_PROFILE, AWS_CONFIG_FILE, …).
func IsKeyName(name string) bool {
	u := "_" + strings.ToUpper(name)
	switch {
	case strings.HasSuffix(u, "_KEY"), strings.HasSuffix(u, "_CREDENTIALS"),
		strings.Contains(u, "_SECRET"), strings.Contains(u, "_TOKEN"),
		strings.Contains(u, "PASSWORD"), strings.Contains(u, "PASSWD"):
		return true
	case strings.HasPrefix(u, "_AWS_"):
		return !awsSettings[u[1:]]
	}
	return false
}

// FromEnviron returns the secrets configured in environ ("KEY=value"
// entries): the value of every variable named like a secret (see IsKeyName),
// and the password, token-like user name or credential query parameter of
// every variable whose value is a URL. Values shorter than MinLen are left
// out. The result is sorted by name and holds each value once.
func FromEnviron(environ []string) []Secret {
	var out []Secret
	seen := map[string]bool{}
	add := func(name, value string) {
		if len(value) < MinLen || seen[value] {
			return
		}
		seen[value] = true
		out = append(out, Secret{Name: name, Value: value})
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		if IsKeyName(k) {
			add(k, strings.TrimSpace(v))
			continue
		}
		for _, s := range URLCredentials(k, v) {
			add(s.Name, s.Value)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// URLCredentials returns the credentials written into raw when it is a URL
// (the value of the variable or flag called name): the user info's
// password, a user name that stands alone (https://TOKEN@host), and the
// values of credential query parameters. It returns nil for anything that
// is not a URL with credentials.
func URLCredentials(name, raw string) []Secret {
	if !strings.Contains(raw, "://") {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return nil
	}
	var out []Secret
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, Secret{Name: name + " password", Value: pw})
		} else if user := u.User.Username(); user != "" {
			out = append(out, Secret{Name: name + " credentials", Value: user})
		}
	}
	q := u.Query()
	for _, p := range urlSecretParams {
		for _, v := range q[p] {
			out = append(out, Secret{Name: name + " " + p, Value: v})
		}
	}
	return out
}
