package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"golang.org/x/sys/unix"

	"github.com/shepherdzk/shepherd/session"
)

// Terminal control: carriage return + clear to the end of the line; home +
// clear the screen.
const (
	clearLine   = "\r\x1b[K"
	clearScreen = "\x1b[H\x1b[2J"
)

// terminal reports whether w is a terminal that understands the escapes
// above (not TERM=dumb).
func terminal(w io.Writer) (width int, ok bool) {
	width, _, ok = termSize(w)
	return width, ok
}

// termSize is terminal, with the terminal's width and height (80x24 if
// unknown).
func termSize(w io.Writer) (width, height int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || os.Getenv("TERM") == "dumb" {
		return 0, 0, false
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return 0, 0, false
	}
	width, height = 80, 24
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		width, height = int(ws.Col), int(ws.Row)
	}
	return width, height, true
}

// fit cuts text to a screen of width x height: each line to width-1
// characters (no wrap), and the lines to height-1, the last one kept.
func fit(text string, width, height int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if height > 2 && len(lines) > height-1 {
		n := len(lines) - (height - 2)
		lines = append(lines[:height-3], fmt.Sprintf("… %d more lines", n), lines[len(lines)-1])
	}
	for i, l := range lines {
		if r := []rune(l); width > 2 && len(r) > width-1 {
			lines[i] = string(r[:width-2]) + "…"
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// ordinal is "1st", "2nd", "3rd", "4th", "11th", "21st".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// age is a duration for a person: whole seconds.
func age(now, since time.Time) string {
	return now.Sub(since).Round(time.Second).String()
}

// printable replaces control characters (a holder's id is anyone's data).
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return s
}

// errReadCut: a read for a screen gave up because the connection it was
// made on was lost (see inspectNow).
var errReadCut = errors.New("the connection was lost during the read")

// inspectNow reads path (admin.InspectW) on the current connection, within
// limit, and gives up with errReadCut as soon as that connection is lost
// (or at once when there is none): a screen that redraws between reads then
// says ZooKeeper is away at once, instead of waiting, frozen, for the
// session to come back (the read's retry across reconnects).
func inspectNow(ctx context.Context, sess *session.Session, path string, limit time.Duration) (*admin.Snapshot, error) {
	ep, ok := sess.Current()
	if !ok {
		return nil, errReadCut
	}
	qctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	defer context.AfterFunc(ep.Context(), cancel)()
	s, err := admin.InspectW(qctx, sess, sess.Path(path))
	if err != nil && ctx.Err() == nil && ep.Context().Err() != nil {
		return nil, errReadCut
	}
	return s, err
}

// waitLine shows, on a terminal, one status line rewritten in place while a
// lock or lease is awaited: the place in line, who holds it and for how
// long, or that ZooKeeper is disconnected. It reads the line with
// admin.InspectW on a goroutine of its own, again on each change; the ages
// move once a second. stop ends it and clears the line; on anything but a
// terminal it does nothing.
func (c *cli) waitLine(sess *session.Session, what, path string) (stop func()) {
	width, ok := terminal(c.stderr)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var (
		mu   sync.Mutex
		down time.Time // when ZooKeeper went away; zero while connected
	)
	unlisten := sess.Listen(func(ev session.Event) {
		mu.Lock()
		switch {
		case ev.State == session.Suspended && down.IsZero():
			down = ev.Time
		case ev.State.Live():
			down = time.Time{}
		}
		mu.Unlock()
		poke()
	})
	mu.Lock()
	if st, at := sess.StateSince(); !st.Live() && down.IsZero() {
		down = at
	}
	mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var snap *admin.Snapshot
		last := ""
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		read := true
		for {
			mu.Lock()
			d := down
			mu.Unlock()
			var watch <-chan struct{}
			if read && d.IsZero() {
				s, err := inspectNow(ctx, sess, path, 10*time.Second)
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					snap, read = s, false
					if s.Watch != nil {
						ch := make(chan struct{})
						go func() {
							select {
							case <-s.Watch:
								close(ch)
							case <-ctx.Done():
							}
						}()
						watch = ch
					}
				}
			}
			var own int64
			if ep, ok := sess.Current(); ok {
				own = ep.SessionID()
			}
			line := waitText(what, path, snap, own, d, time.Now())
			if r := []rune(line); len(r) >= width {
				line = string(r[:width-2]) + "…"
			}
			if line != last {
				fmt.Fprint(c.stderr, clearLine+line)
				last = line
			}
			select {
			case <-ctx.Done():
				return
			case <-watch:
				read = true
			case <-changed:
				read = true
			case <-tick.C:
			}
			if watch == nil && !read {
				// No watch set (an error): read again on the tick.
				read = true
			}
		}
	}()
	return func() {
		cancel()
		unlisten()
		<-done
		fmt.Fprint(c.stderr, clearLine)
	}
}

// waitText is the waiting line: "shepherd: waiting for the lock on /x: 2nd
// in line; held by host-a for 12s". own is the waiter's session.
func waitText(what, path string, s *admin.Snapshot, own int64, down, now time.Time) string {
	head := fmt.Sprintf("shepherd: waiting for %s on %s", what, path)
	if !down.IsZero() {
		return fmt.Sprintf("%s: ZooKeeper disconnected since %s (%s)", head, down.Format("15:04:05"), age(now, down))
	}
	if s == nil {
		return head
	}
	var parts []string
	if s.Fair {
		line := append(append([]admin.Entry{}, s.Holders...), s.Waiters...)
		if s.Kind == "semaphore" {
			line = s.Waiters
		}
		for i, e := range line {
			if own != 0 && e.SessionID == own {
				parts = append(parts, ordinal(i+1)+" in line")
				break
			}
		}
	}
	switch {
	case len(s.Holders) == 0:
		parts = append(parts, "free")
	case s.Kind == "semaphore":
		h := s.Holders[0]
		for _, e := range s.Holders {
			if e.Created.Before(h.Created) {
				h = e
			}
		}
		parts = append(parts, fmt.Sprintf("%d/%d leases held, longest by %s for %s",
			len(s.Holders), s.MaxLeases, printable(h.Data), age(now, h.Created)))
	default:
		h := s.Holders[0]
		parts = append(parts, fmt.Sprintf("held by %s for %s", printable(h.Data), age(now, h.Created)))
	}
	return head + ": " + strings.Join(parts, "; ")
}
