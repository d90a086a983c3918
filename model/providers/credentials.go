package providers

import "github.com/inkdev/ink/model"

// Credentials returns the secret variables a worker needs to open b, with
// their values taken from env (nil = the process environment): the
// provider's key variable when it is set, nothing for providers that take
// no key and for the script model. The supervisor hands exactly these to
// the worker of b, inside its attempt spec; the worker's environment holds
// no key.
func Credentials(b model.Binding, env func(string) string) map[string]string {
	env = envOrOS(env)
	p, ok := lookupPreset(b.Provider)
	if !ok || p.keyVar == "" {
		return nil
	}
	v := env(p.keyVar)
	if v == "" {
		return nil
	}
	return map[string]string{p.keyVar: v}
}

// WorkerSettings returns the provider variables that are set in env (nil = the
// process environment) and that a worker needs besides its credentials:
// the stall limits. The supervisor hands them to every worker inside its
// attempt spec, as it does the key, since a worker's environment holds no
// provider variable. nil when none is set.
func WorkerSettings(env func(string) string) map[string]string {
	env = envOrOS(env)
	var out map[string]string
	for _, k := range []string{model.ResponseHeaderTimeoutVar, model.StreamIdleTimeoutVar} {
		if v := env(k); v != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// IsProviderVar reports whether name is one of the variables the providers
// read (EnvVars).
func IsProviderVar(name string) bool {
	for _, v := range EnvVars() {
		if v == name {
			return true
		}
	}
	return false
}
