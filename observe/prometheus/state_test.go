package prometheus_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// TestSessionStateRightAfterOpen: metrics gathered the moment session.Open
// returns show the session Connected (the observer's listener had not yet
// run, several times in ten, before Open waited for it).
func TestSessionStateRightAfterOpen(t *testing.T) {
	for i := range 10 {
		reg := prometheus.NewRegistry()
		obs, err := promobs.New(reg)
		require.NoError(t, err)
		s := open(t, zk.Servers(), session.WithObserver(obs))
		v, ok := series(t, reg, "shepherd_session_state", map[string]string{"state": "Connected"})
		require.True(t, ok, "open %d: no shepherd_session_state right after Open", i)
		require.Equal(t, 1.0, v, "open %d", i)
		s.Close()
	}
}
