package session

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// logQueue hands the manager's log messages — its state changes and
// go-zookeeper's own messages — to the session's logger on a goroutine of its
// own. They are produced on go-zookeeper's goroutines (its event callback, its
// connection loop, which logs every disconnect before it reports it) and under
// the manager's lock: a log handler that blocks there (stderr into a pipe
// nobody drains, a slow log shipper) would stall the connection: no event is
// reported and nothing is redialled. A message that finds the queue full is
// dropped, and the number dropped is logged with the next one.
type logQueue struct {
	log     *slog.Logger
	q       chan logEntry
	dropped atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

type logEntry struct {
	level slog.Level
	msg   string
	args  []any
}

// logQueueLen bounds the messages waiting for a slow handler.
const logQueueLen = 1024

func newLogQueue(log *slog.Logger) *logQueue {
	q := &logQueue{log: log, q: make(chan logEntry, logQueueLen), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *logQueue) enabled(level slog.Level) bool { return q.log.Enabled(context.Background(), level) }

// add queues a message; it never blocks.
func (q *logQueue) add(level slog.Level, msg string, args ...any) {
	if !q.enabled(level) {
		return
	}
	select {
	case q.q <- logEntry{level, msg, args}:
	default:
		q.dropped.Add(1)
	}
}

func (q *logQueue) run() {
	defer close(q.done)
	for {
		select {
		case e := <-q.q:
			q.write(e)
		case <-q.stop:
			for {
				select {
				case e := <-q.q:
					q.write(e)
				default:
					return
				}
			}
		}
	}
}

func (q *logQueue) write(e logEntry) {
	if n := q.dropped.Swap(0); n > 0 {
		q.log.Warn("session: log messages dropped: the log handler is too slow", "dropped", n)
	}
	q.log.Log(context.Background(), e.level, e.msg, e.args...)
}

// close stops the queue once the messages already queued are written; done
// is closed then.
func (q *logQueue) close() { close(q.stop) }

// zkLogger sends go-zookeeper's messages to the manager's log queue.
type zkLogger struct{ q *logQueue }

func (l zkLogger) Printf(format string, args ...any) {
	if l.q.enabled(slog.LevelDebug) {
		l.q.add(slog.LevelDebug, "go-zookeeper: "+sprintf(format, args...))
	}
}
