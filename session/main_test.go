package session

import (
	"os"
	"testing"
)

// appenderEnv switches the test binary into the appender process used by
// the crash tests: it appends to the transcript named by the variable until
// it is killed.
const appenderEnv = "INK_SESSION_TEST_APPENDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(appenderEnv); path != "" {
		os.Exit(runAppender(path))
	}
	os.Exit(m.Run())
}
