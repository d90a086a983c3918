// Package secret keeps ink's secrets — model provider keys and credentials
// written into URLs — in memory and out of everything ink writes or sends.
//
// # What it owns
//
//   - [FromEnviron] finds the secrets configured in an environment: the
//     values of variables whose names mark them as keys or tokens
//     (ANTHROPIC_API_KEY, *_AUTH_TOKEN, …) and the credentials embedded in
//     URL-valued variables (https://user:pass@host, ?api_key=…).
//   - [Redactor] replaces every exact occurrence of a secret in a text with
//     "[redacted:NAME]". A process that holds a secret's value redacts it by
//     value; a process that must not hold it (a worker, for every key but
//     its own binding's) redacts it from a [Fingerprint]: the value's length,
//     its first bytes and its SHA-256, enough to recognise the value and not
//     enough to use it.
//   - [Harden] makes the calling process non-dumpable, so other processes of
//     the same user can read neither its memory nor its /proc files, and
//     [ScrubEnviron] blanks secret values in the environment block the
//     kernel shows as /proc/<pid>/environ (Go keeps its own copy, which the
//     process goes on using).
//
// None of this protects against root or against a process that can read the
// files a secret came from; the README's Security section says what is and
// is not protected.
package secret
