package session

// Parse parses data as the whole content of the transcript at path, with
// the checks of Open: a store that keeps transcripts elsewhere than in
// files (a supervisor's in-memory store, bytes received from another
// machine) reads them with the same rules as a file.
//
// ink's own stores read files; Parse is kept for the in-memory Store of
// orchestrator's tests (docs/architecture.md, Supervision).
func Parse(path string, data []byte) (*Transcript, error) {
	return parseTranscript(path, data)
}

// Tail is what ReadTail would say of the file t was read from.
func (t *Transcript) Tail() Tail {
	out := Tail{Header: t.Header, HasMessages: len(t.Messages) > 0}
	for i := len(t.Entries) - 1; i >= 0; i-- {
		a := t.Entries[i].Attempt
		if a == nil {
			continue
		}
		if a.Phase == PhaseEnd {
			end := *a
			out.LastEnd = &end
			break
		}
		if a.Phase == PhaseStart {
			out.StartedSince = true
		}
	}
	return out
}

// Lifetime is what ReadLifetime would say of the file t was read from:
// the sum the last end entry holds when no attempt started after it, else
// the sum of every attempt entry.
func (t *Transcript) Lifetime() Lifetime {
	tail := t.Tail()
	if tail.LastEnd != nil && tail.LastEnd.Lifetime != nil && !tail.StartedSince {
		return *tail.LastEnd.Lifetime
	}
	var l Lifetime
	for _, a := range t.Attempts() {
		l.add(a)
	}
	return l.Total()
}

// EncodeHeader fills h's defaults, validates it and returns its line,
// ending in "\n", as Create would write it: for a store that keeps
// transcripts elsewhere than in files.
//
// Kept, like Parse, for the in-memory Store of orchestrator's tests.
func EncodeHeader(h Header) ([]byte, error) {
	_, line, err := encodeHeader(h)
	return line, err
}
