package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MntrSource is where the counters come from: a zktest.Cluster.
type MntrSource interface {
	Size() int
	Mntr(ctx context.Context, i int) (map[string]string, error)
}

// Fired watch notifications: ZooKeeper 3.6+ records, for every triggered
// event, how many watchers it notified, as summaries per event type; their
// _sum is the number of notifications sent. (Checked by experiment on 3.8.0:
// one delete of a node watched by two sessions adds 1 to
// zk_cnt_node_deleted_watch_count and 2 to zk_sum_node_deleted_watch_count;
// a child created under a node with a children watch adds 1 to
// zk_sum_node_children_watch_count.)
var watchSumKeys = []string{
	"zk_sum_node_created_watch_count",
	"zk_sum_node_deleted_watch_count",
	"zk_sum_node_changed_watch_count",
	"zk_sum_node_children_watch_count",
}

// Bytes through the server, both ways: what clients sent
// (zk_bytes_received_count), and what the server sent back: its responses
// (zk_response_bytes) and its watch notifications (zk_watch_bytes), all
// counters. ZooKeeper 3.6+. (Checked by experiment on 3.8.0: listing 1,000
// children of 46 bytes each adds about 50,000 to zk_response_bytes.)
var byteKeys = []string{
	"zk_bytes_received_count",
	"zk_response_bytes",
	"zk_watch_bytes",
}

// Snapshot is the server-side counters at one moment, summed over the nodes.
type Snapshot struct {
	Packets       int64 // zk_packets_received: every request a client sent, pings included
	Notifications int64 // watch notifications fired (watchSumKeys)
	Outstanding   int64 // zk_outstanding_requests
	WatchCount    int64 // zk_watch_count: watches registered now
	Bytes         int64 // bytes both ways (byteKeys)
	reads         int   // the meter's read number, to discount its own packets
}

// Meter reads the counters. Reading them costs packets of its own (ZooKeeper
// 3.8 counts a four-letter word in zk_packets_received); the meter measures
// that cost once (Calibrate) and discounts it.
type Meter struct {
	src          MntrSource
	reads        int
	perRead      int64 // packets one read adds, summed over nodes
	perReadBytes int64 // bytes one read adds (if any), summed over nodes
}

// NewMeter returns a meter over src. Call Calibrate before measuring.
func NewMeter(src MntrSource) *Meter { return &Meter{src: src, perRead: int64(src.Size())} }

// Read takes one snapshot.
func (m *Meter) Read(ctx context.Context) (Snapshot, error) {
	m.reads++
	s := Snapshot{reads: m.reads}
	for i := range m.src.Size() {
		kv, err := m.src.Mntr(ctx, i)
		if err != nil {
			return s, err
		}
		p, ok := intKey(kv, "zk_packets_received")
		if !ok {
			return s, fmt.Errorf("bench: node %d: mntr has no zk_packets_received", i)
		}
		s.Packets += p
		for _, k := range watchSumKeys {
			v, _ := intKey(kv, k)
			s.Notifications += v
		}
		for _, k := range byteKeys {
			v, _ := intKey(kv, k)
			s.Bytes += v
		}
		v, _ := intKey(kv, "zk_outstanding_requests")
		s.Outstanding += v
		v, _ = intKey(kv, "zk_watch_count")
		s.WatchCount += v
	}
	return s, nil
}

func intKey(kv map[string]string, k string) (int64, bool) {
	v, ok := kv[k]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, false
		}
		n = int64(f)
	}
	return n, true
}

// Calibrate measures what one read costs on an idle cluster: the smallest
// packet delta over a few back-to-back reads.
func (m *Meter) Calibrate(ctx context.Context) error {
	prev, err := m.Read(ctx)
	if err != nil {
		return err
	}
	best, bestBytes := int64(-1), int64(-1)
	for range 5 {
		s, err := m.Read(ctx)
		if err != nil {
			return err
		}
		if d := s.Packets - prev.Packets; best < 0 || d < best {
			best = d
		}
		if d := s.Bytes - prev.Bytes; bestBytes < 0 || d < bestBytes {
			bestBytes = d
		}
		prev = s
	}
	m.perRead, m.perReadBytes = best, bestBytes
	return nil
}

// PerRead is the calibrated cost of one read, in packets.
func (m *Meter) PerRead() int64 { return m.perRead }

// Delta is what happened between two snapshots, less the meter's own reads.
type Delta struct {
	Packets       int64
	Notifications int64
	Bytes         int64
}

// Delta returns b − a.
func (m *Meter) Delta(a, b Snapshot) Delta {
	return Delta{
		Packets:       b.Packets - a.Packets - int64(b.reads-a.reads)*m.perRead,
		Notifications: b.Notifications - a.Notifications,
		Bytes:         b.Bytes - a.Bytes - int64(b.reads-a.reads)*m.perReadBytes,
	}
}

// Quiet waits until the cluster is quiet — no request but the meter's own
// over two consecutive intervals, none outstanding — and returns the last
// snapshot. A prepared run can still be settling (a waiter's watch not yet
// set, a background delete in flight); counting from a quiet point keeps that
// out of (or in) the right run. Gives up after max and returns the last
// snapshot with quiet=false.
func (m *Meter) Quiet(ctx context.Context, max time.Duration) (s Snapshot, quiet bool, err error) {
	const interval = 50 * time.Millisecond
	deadline := time.Now().Add(max)
	prev, err := m.Read(ctx)
	if err != nil {
		return prev, false, err
	}
	calm := 0
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return prev, false, ctx.Err()
		case <-t.C:
		}
		s, err := m.Read(ctx)
		if err != nil {
			return s, false, err
		}
		if m.Delta(prev, s).Packets <= 0 && s.Outstanding == 0 {
			calm++
		} else {
			calm = 0
		}
		prev = s
		if calm >= 2 {
			return s, true, nil
		}
		if time.Now().After(deadline) {
			return s, false, nil
		}
	}
}
