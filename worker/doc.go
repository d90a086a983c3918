// Package worker is the worker process, the hidden `ink worker` command: it
// serves the host's attempt stream (package ipc), holds the lease on its own
// transcript, runs one attempt of one agent through the agent loop and
// streams its events.
//
// The agent's task calls, and the task_status, task_wait and task_cancel
// calls of an agent that may delegate, are forwarded to the host as typed
// requests; the host runs the children. An agent that ends its turn while
// children it started in the background have not been collected is told
// which ones and goes on; after a couple of such reminders the worker waits
// for them itself and hands the model their results (with their
// TaskRecords, in the transcript) before its final turn. Turns are numbered
// across these loop runs, within the attempt.
//
// When the host is lost (its stream breaks, or it sends Cancel with status
// interrupted) the worker stops at once, records interrupted / "host lost"
// and leaves its open task calls to be answered from the children's own
// transcripts when it is resumed.
package worker
