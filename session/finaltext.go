package session

import "unicode/utf8"

// MaxFinalText is the most of an attempt's final text that its end entry
// keeps: the tail, which is all a task result shows. The whole text is
// already in the transcript as the attempt's last assistant message; the
// bound keeps a long answer from being stored twice.
const MaxFinalText = 50 << 10

// FinalTextTail returns the last MaxFinalText bytes of text, cut on a
// character boundary: what an end entry's FinalText holds.
func FinalTextTail(text string) string {
	if len(text) <= MaxFinalText {
		return text
	}
	cut := len(text) - MaxFinalText
	for cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut++
	}
	return text[cut:]
}
