package election

// Proclaim (issue 38): the leader changes the value followers see, without
// re-election, as etcd's Election.Proclaim does.

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Proclaim sets the value followers see (Leader.Value, in Observe,
// OnLeader and Leader) to value, without re-election: it rewrites this
// leader's node, a fenced write that lands only while this leadership
// holds (an error matching ErrLost otherwise). A new leadership starts with
// no value. value must be valid UTF-8 of at most MaxAttributesLen bytes.
//
// In a fair election whose next candidate is not shepherd's (a Curator
// LeaderLatch participant, which acts only on its predecessor's deletion:
// a data change would spend its watch) it returns ErrForeignRecipe and
// writes nothing.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if len(value) > MaxAttributesLen || !utf8.ValidString(value) {
		return fmt.Errorf("election: %w: a value of %d bytes (UTF-8, at most %d)", ErrInvalidArgument, len(value), MaxAttributesLen)
	}
	if err := l.ended(); err != nil {
		return err
	}
	e := l.e
	if e.fair {
		if err := e.nextIsShepherds(ctx, l); err != nil {
			return err
		}
	}
	for range 5 { // a revocation request written meanwhile: read again
		err := e.proclaimOnce(ctx, l, value)
		if !errors.Is(err, zk.ErrBadVersion) {
			if err == nil {
				e.handovers().SetValue(value)
			}
			return err
		}
	}
	return fmt.Errorf("election %s: proclaim: the leader's node keeps changing", e.path)
}

// proclaimOnce reads l's node and writes it again with value, at the
// version read (an operator's revocation request in it is kept).
func (e *Election) proclaimOnce(ctx context.Context, l *Leadership, value string) error {
	var data []byte
	var st *zk.Stat
	err := e.sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		data, st, err = ep.Conn().Get(l.node.path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) || err == nil && st.Czxid != int64(l.Term()) {
		return fmt.Errorf("election %s: %w (term %v has ended): %w", e.path, ErrNotLeader, l.Term(), ErrLost)
	}
	if err != nil {
		return err
	}
	suffix := data[len(line.StripRevoke(data)):]
	_, d := parseCandidate(data)
	d.Value = value
	out := append(encodeCandidate(e.id, d), suffix...)
	_, err = l.Fenced(ctx, fence.Raw(&zk.SetDataRequest{Path: l.node.path, Data: out, Version: st.Version}))
	return err
}

// nextIsShepherds refuses a write of the leader's node when the candidate
// behind it is another library's (see Proclaim).
func (e *Election) nextIsShepherds(ctx context.Context, l *Leadership) error {
	var next line.Name
	err := e.sess.Do(ctx, func(ep *session.Epoch) error {
		names, err := e.line().List(ep)
		if err != nil {
			return err
		}
		next = line.Name{}
		if i := line.Index(names, l.node.name); i >= 0 && i+1 < len(names) {
			next = names[i+1]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if next.Name != "" && !next.Shepherd() {
		return fmt.Errorf("election %s: %w: the candidate behind the leader, %s, is %s's, which a change of the "+
			"leader's node would leave waiting for ever", e.path, ErrForeignRecipe, next.Name, line.Library(next.Kind))
	}
	return nil
}
