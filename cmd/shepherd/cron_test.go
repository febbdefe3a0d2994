package main_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScheduleCron: schedule -cron with -tz ticks on the expression's
// seconds (each tick once, SHEPHERD_TICK_TIME a whole second, one apart),
// and status shows the expression; -every with -cron, -tz without -cron, a
// bad expression or zone are usage errors (exit 2).
func TestScheduleCron(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	file := filepath.Join(t.TempDir(), "ticks")
	script := fmt.Sprintf(`echo "$SHEPHERD_TICK $SHEPHERD_TICK_TIME" >> %s`, file)
	p, _ := start(t, nil, "schedule", "-cron", "* * * * * *", "-tz", "Europe/Paris", "-catch-up", "all:100", path, "--", "sh", "-c", script)
	require.Eventually(t, func() bool { ticks, _ := ticksIn(t, file); return len(ticks) >= 3 },
		30*time.Second, 50*time.Millisecond)
	ticks, times := ticksIn(t, file)
	var prev time.Time
	for i := range 3 {
		require.EqualValues(t, i, ticks[i])
		at, err := time.Parse(time.RFC3339Nano, times[i])
		require.NoError(t, err)
		require.Zero(t, at.Nanosecond(), "tick %d at %s", i, times[i])
		if i > 0 {
			require.Equal(t, time.Second, at.Sub(prev))
		}
		prev = at
	}
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, path+`: schedule cron "CRON_TZ=Europe/Paris * * * * * *"`)
	require.NoError(t, p.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, p))

	for _, args := range [][]string{
		{"-every", "1s", "-cron", "* * * * *"},
		{"-every", "1s", "-tz", "Europe/Paris"},
		{"-cron", "61 * * * *"},
		{"-cron", "* * * * *", "-tz", "Mars/Olympus"},
		{"-cron", "CRON_TZ=UTC * * * * *", "-tz", "Europe/Paris"},
	} {
		r := shepherd(t, nil, append(append([]string{"schedule"}, args...), path+"-bad", "--", "true")...)
		require.Equal(t, 2, r.code, "%q: %s", args, r.stderr)
	}
}
