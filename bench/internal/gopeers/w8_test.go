package gopeers

import (
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/bench"
)

// TestRollStats: only what happens between Start and Stop counts; a pause
// that resumes is time but no loss; a loss is counted once however many
// signals report it; a re-election of the same candidate is a change, not
// a move.
func TestRollStats(t *testing.T) {
	st := NewRollStats(2)
	st.HolderOn(0)
	st.HolderOn(1)
	st.LeaderOn(0, true) // the first election: not counted
	if !st.Settled() {
		t.Fatal("not settled with both holders holding and a leader")
	}
	st.HolderOff(0, true) // before Start: not counted
	st.HolderOn(0)
	st.Start()
	st.HolderOff(1, false) // paused
	if st.Settled() {
		t.Fatal("settled with a holder paused")
	}
	time.Sleep(5 * time.Millisecond) // the pause's length, which the stats measure
	st.HolderOn(1)                   // resumed
	st.HolderOff(0, true)
	st.HolderOff(0, true)            // a second signal of the same loss
	time.Sleep(5 * time.Millisecond) // the pause's length, which the stats measure
	st.HolderOn(0)
	st.LeaderOff(0, true)
	st.LeaderOff(1, true) // not the leader: stale
	st.LeaderOn(0, true)  // the same candidate again
	st.LeaderOff(0, false)
	st.LeaderOn(0, false) // resumed
	st.LeaderOff(0, true)
	st.LeaderOn(1, true) // another candidate
	st.SessionLost()
	m := st.Stop()
	want := map[string]float64{bench.MHoldsLost: 1, bench.MLeaderChanges: 2, bench.MLeaderMoves: 1,
		bench.MLeaderLosses: 2, bench.MSessionsLost: 1}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v; want %v (all: %v)", k, m[k], v, m)
		}
	}
	if m[bench.MLockPausedS] < 0.01 {
		t.Errorf("lock paused %vs; want at least the 10ms slept", m[bench.MLockPausedS])
	}
	st.HolderOff(0, true) // after Stop: not counted
	if m := st.Stop(); m[bench.MHoldsLost] != 1 {
		t.Errorf("a loss after Stop counted: %v", m)
	}
}
