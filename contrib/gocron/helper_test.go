package gocron_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	gocronv2 "github.com/go-co-op/gocron/v2"

	"github.com/shepherdzk/shepherd/contrib/gocron"
	"github.com/shepherdzk/shepherd/session"
)

// The helper process: a gocron scheduler with shepherd's Locker, a job
// every second, its host clock skewed; each claim is appended to a file
// shared by the helpers ("RUN_MS ID"). It runs until SIGTERM.
const (
	helperEnv = "SHEPHERD_GOCRON_HELPER" // the helper's id
	zkEnv     = "SHEPHERD_GOCRON_ZK"
	pathEnv   = "SHEPHERD_GOCRON_PATH"
	skewEnv   = "SHEPHERD_GOCRON_SKEW"
	outEnv    = "SHEPHERD_GOCRON_OUT"
	modeEnv   = "SHEPHERD_GOCRON_MODE" // "elector": an Elector instead of the Locker
)

// jobWork is how long each run's job works: runs are killed and stopped
// in the middle of it.
const jobWork = 300 * time.Millisecond

// testCtx bounds a setup step of a process (its cancel runs at the
// deadline: the timer is the only resource).
func testCtx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return ctx
}

func helperMain() int {
	id := os.Getenv(helperEnv)
	fail := func(err error) int { fmt.Fprintf(os.Stderr, "helper %s: %v\n", id, err); return 1 }
	skew, err := time.ParseDuration(os.Getenv(skewEnv))
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	sess, err := session.Open(testCtx(30*time.Second), strings.Split(os.Getenv(zkEnv), ","),
		session.WithSessionTimeout(2*time.Second))
	if err != nil {
		return fail(err)
	}
	defer sess.Close()
	out, err := os.OpenFile(os.Getenv(outEnv), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	defer out.Close()
	if os.Getenv(modeEnv) == "elector" {
		return electorMain(ctx, sess, id, skew, out)
	}
	l, err := gocron.NewLocker(sess, os.Getenv(pathEnv), id, gocron.JobCron("tick", "* * * * * *"),
		gocron.WithTolerance(400*time.Millisecond),
		gocron.WithOnClaim(func(_ string, run time.Time) { fmt.Fprintf(out, "%d %s\n", run.UnixMilli(), id) }))
	if err != nil {
		return fail(err)
	}
	var lk gocronv2.Locker = l
	if os.Getenv("SHEPHERD_GOCRON_DEBUG") != "" {
		lk = debugLocker{l, id}
	}
	s, err := gocronv2.NewScheduler(gocronv2.WithClock(newOffsetClock(skew)), gocronv2.WithDistributedLocker(lk))
	if err != nil {
		return fail(err)
	}
	_, err = s.NewJob(gocronv2.CronJob("* * * * * *", true), gocronv2.NewTask(func() { time.Sleep(jobWork) }),
		gocronv2.WithName("tick"))
	if err != nil {
		return fail(err)
	}
	s.Start()
	<-ctx.Done()
	if err := s.Shutdown(); err != nil {
		return fail(err)
	}
	return 0
}

// debugLocker logs each Lock's outcome (SHEPHERD_GOCRON_DEBUG=1).
type debugLocker struct {
	l  gocronv2.Locker
	id string
}

func (d debugLocker) Lock(ctx context.Context, key string) (gocronv2.Lock, error) {
	t := time.Now()
	k, err := d.l.Lock(ctx, key)
	fmt.Fprintf(os.Stderr, "%s %s lock %v: %v\n", t.Format("05.000"), d.id, time.Since(t).Round(time.Millisecond), err)
	return k, err
}

// electorMain runs a job every 200 ms on the leader (an Elector): each run
// appends "START_MS ID" when it starts.
func electorMain(ctx context.Context, sess *session.Session, id string, skew time.Duration, out *os.File) int {
	fail := func(err error) int { fmt.Fprintf(os.Stderr, "helper %s: %v\n", id, err); return 1 }
	el, err := gocron.StartElector(ctx, sess, os.Getenv(pathEnv), id)
	if err != nil {
		return fail(err)
	}
	defer el.Close()
	s, err := gocronv2.NewScheduler(gocronv2.WithClock(newOffsetClock(skew)), gocronv2.WithDistributedElector(el))
	if err != nil {
		return fail(err)
	}
	_, err = s.NewJob(gocronv2.DurationJob(200*time.Millisecond), gocronv2.NewTask(func() {
		fmt.Fprintf(out, "%d %s\n", time.Now().UnixMilli(), id)
		time.Sleep(100 * time.Millisecond) // the job's work
	}), gocronv2.WithName("tick"))
	if err != nil {
		return fail(err)
	}
	s.Start()
	<-ctx.Done()
	if err := s.Shutdown(); err != nil {
		return fail(err)
	}
	return 0
}
