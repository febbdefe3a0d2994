package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseTick(t *testing.T) {
	line := `time=2026-11-26T09:31:20.123Z level=INFO msg=tick scheduler=a n=3 scheduled=2026-11-26T09:31:20.1Z attempt=2 term=41`
	tk, ok := parseTick(line)
	if !ok || tk.n != 3 || tk.attempt != 2 || tk.term != 41 || !tk.scheduled.Equal(time.Date(2026, 11, 26, 9, 31, 20, 1e8, time.UTC)) {
		t.Fatalf("parseTick = %+v, %v", tk, ok)
	}
	for _, l := range []string{`level=WARN msg="job cancelled" n=3`, `msg=tick n=x`, ``} {
		if _, ok := parseTick(l); ok {
			t.Errorf("parseTick(%q) is a tick", l)
		}
	}
}

func TestLineWriter(t *testing.T) {
	l := newTickLog()
	w := &lineWriter{id: "b", log: l}
	for _, p := range []string{"msg=tick n=0 sched", "uled=2026-11-26T09:31:20Z attempt=1 term=1\nmsg=other\n", "msg=tick n=1 scheduled=2026-11-26T09:31:21Z attempt=1 term=1\n"} {
		io.WriteString(w, p)
	}
	got := l.lines()
	if len(got) != 2 || got[0].n != 0 || got[1].n != 1 || got[0].id != "b" {
		t.Fatalf("lines = %+v", got)
	}
}

func TestCheckTicks(t *testing.T) {
	t0 := time.Now()
	tick := func(id string, n int64, late time.Duration) tickLine {
		due := t0.Add(time.Duration(n) * schedEvery)
		return tickLine{id: id, n: n, attempt: 1, scheduled: due, at: due.Add(late)}
	}
	ms := time.Millisecond
	for _, c := range []struct {
		name  string
		ticks []tickLine
		err   string // "" when the ticks pass
	}{
		{"once each", []tickLine{tick("a", 0, ms), tick("a", 1, ms), tick("b", 2, ms)}, ""},
		{"catch-up once", []tickLine{tick("a", 0, ms), tick("b", 3, 50*ms), tick("b", 4, ms)}, ""},
		{"twice", []tickLine{tick("a", 0, ms), tick("a", 1, ms), tick("b", 1, 500*ms)}, "tick 1 ran twice"},
		{"backwards", []tickLine{tick("a", 0, ms), tick("a", 2, ms), tick("b", 1, ms)}, "ran after"},
		{"stale after a gap", []tickLine{tick("a", 0, ms), tick("b", 2, 2*schedEvery)}, "not the latest due"},
		{"no tick 0", []tickLine{tick("a", 1, ms)}, "not tick 0"},
	} {
		var out strings.Builder
		d := &demo{out: &out}
		err := d.checkTicks(c.ticks, nil)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: checkTicks = %v, want %q", c.name, err, c.err)
		}
	}
}
