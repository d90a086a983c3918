package orchestrator

import (
	"context"

	"github.com/inkdev/ink/ipc"
)

// Launcher starts workers (ipc.Launcher): package launcher/local's by
// default, launcher/command's for remote children, a fake in tests.
type Launcher = ipc.Launcher

// Worker is one running attempt as the supervisor sees it (ipc.Worker).
type Worker = ipc.Worker

// ExitState is how a worker process ended (ipc.ExitState).
type ExitState = ipc.ExitState

// launchReady launches spec on l once ready (nil: nothing to wait for)
// succeeded, beside the worker's start where l can.
func launchReady(ctx context.Context, l Launcher, spec ipc.AttemptSpec, ready func() error) (Worker, error) {
	if ready == nil {
		return l.Launch(ctx, spec)
	}
	if rl, ok := l.(ipc.ReadyLauncher); ok {
		return rl.LaunchReady(ctx, spec, ready)
	}
	if err := ready(); err != nil {
		return nil, err
	}
	return l.Launch(ctx, spec)
}
