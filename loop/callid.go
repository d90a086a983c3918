package loop

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/inkdev/ink/model"
)

// callIDs remembers the tool call ids of a conversation, so that every call
// the loop runs has an id no other call of the transcript has. Some
// OpenAI-compatible servers send empty ids or reuse "call_0" on every turn;
// a transcript with such ids could not be paired, repaired or resumed.
type callIDs map[string]bool

// newCallIDs records the call ids already in history.
func newCallIDs(history []model.Message) callIDs {
	seen := callIDs{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	return seen
}

// assign gives every call of msg that has an empty or already used id a new
// one of the form call_<turn>_<n>_<random>, and records the ids of msg.
func (seen callIDs) assign(turn int, msg *model.Message) {
	if len(msg.ToolCalls) == 0 {
		return
	}
	var suffix string
	for i := range msg.ToolCalls {
		c := &msg.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			if suffix == "" {
				var b [4]byte
				_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
				suffix = hex.EncodeToString(b[:])
			}
			c.ID = fmt.Sprintf("call_%d_%d_%s", turn, i+1, suffix)
		}
		seen[c.ID] = true
	}
}
