package gocron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	gocronv2 "github.com/go-co-op/gocron/v2"
	"github.com/go-zookeeper/zk"
	"github.com/robfig/cron/v3"

	"github.com/shepherdzk/shepherd/session"
)

// Locker is a gocron Locker that lets each scheduled run of a job run once
// across instances (see the package doc). Its methods are safe for
// concurrent use.
type Locker struct {
	sess    *session.Session
	path    string // in the session's namespace
	id      string
	jobs    map[string]times
	tol     time.Duration
	onClaim func(job string, run time.Time)
}

var _ gocronv2.Locker = (*Locker)(nil)

// times are a job's scheduled times.
type times interface {
	// first is the first scheduled time at or after t.
	first(t time.Time) time.Time
}

type every time.Duration

func (e every) first(t time.Time) time.Time {
	d := int64(e)
	n := t.UnixNano()
	q := n / d * d
	if q < n {
		q += d
	}
	return time.Unix(0, q)
}

type cronTimes struct{ s cron.Schedule }

func (c cronTimes) first(t time.Time) time.Time { return c.s.Next(t.Add(-time.Nanosecond)) }

// cronParser reads robfig/cron's five fields, or six with seconds first,
// descriptors and CRON_TZ= (as gocron's CronJob reads them).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Option configures a Locker.
type Option func(*Locker) error

// JobEvery names the runs of the job called name (gocron's WithName, or
// its function's name) as the multiples of d since the Unix epoch: align
// the job's runs with them (gocron's WithStartAt).
func JobEvery(name string, d time.Duration) Option {
	return func(l *Locker) error {
		if d < time.Millisecond {
			return fmt.Errorf("%w: JobEvery(%q, %v): at least 1ms", ErrInvalidArgument, name, d)
		}
		l.jobs[name] = every(d)
		return nil
	}
}

// JobCron names the runs of the job called name as the activations of a
// cron expression (the job's own: gocron's CronJob).
func JobCron(name, spec string) Option {
	return func(l *Locker) error {
		s, err := cronParser.Parse(spec)
		if err != nil {
			return fmt.Errorf("%w: JobCron(%q, %q): %v", ErrInvalidArgument, name, spec, err)
		}
		l.jobs[name] = cronTimes{s}
		return nil
	}
}

// WithTolerance sets how early or late an instance may ask for a run, on
// ZooKeeper's clock, and still name it as the others do (default 1s): its
// clock's offset, gocron's splay, the time to reach ZooKeeper. It must be
// less than half the time between two runs.
func WithTolerance(d time.Duration) Option {
	return func(l *Locker) error {
		if d < 0 {
			return fmt.Errorf("%w: tolerance %v", ErrInvalidArgument, d)
		}
		l.tol = d
		return nil
	}
}

// WithOnClaim calls f each time this instance claims a run (before the
// job runs), with the job's name and the run's scheduled time.
func WithOnClaim(f func(job string, run time.Time)) Option {
	return func(l *Locker) error { l.onClaim = f; return nil }
}

// NewLocker returns a Locker that keeps its jobs' records under path, as
// the instance id (recorded in each claim). It does no I/O.
func NewLocker(sess *session.Session, path, id string, opts ...Option) (*Locker, error) {
	if sess == nil || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || path == "/" {
		return nil, fmt.Errorf("%w: session %v, path %q", ErrInvalidArgument, sess != nil, path)
	}
	l := &Locker{sess: sess, path: sess.Path(path), id: id, jobs: map[string]times{}, tol: time.Second}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	for name, t := range l.jobs {
		if e, ok := t.(every); ok && 2*l.tol >= time.Duration(e) {
			return nil, fmt.Errorf("%w: tolerance %v is not less than half of job %q's interval %v", ErrInvalidArgument, l.tol, name, time.Duration(e))
		}
	}
	return l, nil
}

// record is a job's node's data: its last claimed run.
type record struct {
	Run     int64  `json:"run_ms"`     // the run's scheduled time (ms since the Unix epoch)
	By      string `json:"by"`         // the instance that claimed it
	Claimed int64  `json:"claimed_ms"` // when, on ZooKeeper's clock
	Done    bool   `json:"done,omitempty"`
}

// Lock implements gocron's Locker: it claims the run of job key due now
// (see the package doc), or returns ErrAlreadyRun. The Lock it returns
// records the run done at Unlock.
func (l *Locker) Lock(ctx context.Context, key string) (gocronv2.Lock, error) {
	t, ok := l.jobs[key]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, key)
	}
	node := l.path + "/" + nodeName(key)
	var lk *lock
	err := l.sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		lk, err = l.claim(ctx, ep.Conn(), node, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	if l.onClaim != nil {
		l.onClaim(key, time.UnixMilli(lk.rec.Run))
	}
	return lk, nil
}

// claim reads the job's record, learns the server's time (the mtime of an
// unconditional write of the Locker's path node: it conflicts with nobody),
// and claims the run named by that time over the version read: a
// concurrent claim makes it read again, and then usually find the run
// claimed.
func (l *Locker) claim(ctx context.Context, c *zk.Conn, node string, t times) (*lock, error) {
	for ctx.Err() == nil {
		data, st, err := c.Get(node)
		if errors.Is(err, zk.ErrNoNode) {
			if err := l.create(c, node); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec record
		if len(data) > 0 && json.Unmarshal(data, &rec) != nil {
			return nil, known{fmt.Errorf("gocron: %s does not hold a job record: %q", node, data)}
		}
		probe, err := c.Set(l.path, nil, -1)
		if err != nil {
			return nil, err
		}
		now := time.UnixMilli(probe.Mtime)
		run := t.first(now.Add(-l.tol)).UnixMilli()
		if rec.Run >= run {
			return nil, known{fmt.Errorf("%w: %s ran at %s (claimed by %s)", ErrAlreadyRun, node,
				time.UnixMilli(rec.Run).UTC().Format(time.RFC3339Nano), rec.By)}
		}
		rec = record{Run: run, By: l.id, Claimed: probe.Mtime}
		b, _ := json.Marshal(rec)
		st, err = c.Set(node, b, st.Version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue // another claim landed: read it
		}
		if err != nil {
			return nil, err
		}
		return &lock{l: l, node: node, rec: rec, ver: st.Version}, nil
	}
	return nil, ctx.Err()
}

// known is an answer, not a failure to reach the server: session.Do must
// not run the operation again (see session.OutcomeUnknown).
type known struct{ error }

func (k known) OutcomeKnown() bool { return true }
func (k known) Unwrap() error      { return k.error }

// create makes the job's record node (and its parents), empty.
func (l *Locker) create(c *zk.Conn, node string) error {
	parts := strings.Split(node[1:], "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := c.Create(p, nil, 0, l.sess.ACL()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("gocron: create %s: %w", p, err)
		}
	}
	return nil
}

// nodeName is a job's name as a node name: escaped, so that a function's
// name ("example.com/pkg.job") is one node.
func nodeName(key string) string {
	n := url.PathEscape(key)
	if n == "" || n == "." || n == ".." {
		n = "job-" + n
	}
	return n
}

// lock is a claimed run.
type lock struct {
	l    *Locker
	node string
	rec  record
	ver  int32
}

// Unlock records the run done, if no later run was claimed meanwhile.
func (k *lock) Unlock(ctx context.Context) error {
	rec := k.rec
	rec.Done = true
	b, _ := json.Marshal(rec)
	return k.l.sess.Do(ctx, func(ep *session.Epoch) error {
		_, err := ep.Conn().Set(k.node, b, k.ver)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			return nil // a later run was claimed: this one's record is gone
		}
		return err
	})
}
