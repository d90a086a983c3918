// Package secret keeps ink's secrets — model provider keys and credentials
// written into URLs — in memory and out of everything ink writes or sends.
//
// # What it owns
//
//   - [FromEnviron] finds the secrets configured in an environment: the
//     values of variables whose names mark them as secrets ([IsKeyName]:
//     *_KEY, *_SECRET*, *_TOKEN*, *PASSWORD*, *_CREDENTIALS, AWS_* but its
//     region, profile and file settings) and the credentials embedded in
//     URL-valued variables (https://user:pass@host, ?api_key=…). Values
//     under [MinLen] bytes are left out.
//   - [Forms] are the texts a secret is recognised in: its exact value and
//     its base64 encodings (standard and URL-safe, at the three alignments
//     the value can have among the encoded bytes), each cut to the
//     characters that depend on the value alone.
//   - [Redactor] replaces every occurrence of every form of a secret in a
//     text with "[redacted:NAME]". A process that holds a secret's value
//     redacts it by value; a process that must not hold it (a worker, for
//     every key but its own binding's) redacts it from a [Fingerprint] of
//     each form: its length, its first bytes and its SHA-256, enough to
//     recognise the form and not enough to use it. It reads a text once,
//     whatever the number of secrets, and decodes nothing: a bit set of
//     the forms' first two bytes rules out almost every position
//     (BenchmarkRedact: about 1 ns a byte, 65 µs for a 64 KiB tool result
//     with two secrets, against 128 µs for one strings.Index per form).
//   - [Harden] makes the calling process non-dumpable, so other processes of
//     the same user can read neither its memory nor its /proc files, and
//     [ScrubEnviron] blanks secret values in the environment block the
//     kernel shows as /proc/<pid>/environ (Go keeps its own copy, which the
//     process goes on using).
//
// None of this protects against root or against a process that can read the
// files a secret came from, and a redactor finds only the forms above: a
// secret under another name, shorter than MinLen, split across lines,
// hex-encoded, URL-escaped or otherwise transformed passes through. The
// README's Security section says what is and is not protected.
package secret
