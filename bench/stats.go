package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 1) of ds by nearest rank
// (the smallest value with at least p of the samples at or below it), in
// microseconds; NaN when ds is empty. The Java and Python drivers use the
// same definition. ds is sorted in place.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	i = max(0, min(i, len(ds)-1))
	return float64(ds[i]) / float64(time.Microsecond)
}

// LatencyMetrics sets the p50 and p99 latency metrics of m from ds.
func LatencyMetrics(m map[string]float64, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	m[MLatencyP50] = Percentile(ds, 0.50)
	m[MLatencyP99] = Percentile(ds, 0.99)
}

// TimeWeighted integrates an in-process level (held leases) over time; safe
// for concurrent use.
type TimeWeighted struct {
	mu    sync.Mutex
	cur   int
	start time.Time
	last  time.Time
	area  float64 // level × seconds
}

// NewTimeWeighted starts integrating at level 0.
func NewTimeWeighted() *TimeWeighted {
	now := time.Now()
	return &TimeWeighted{start: now, last: now}
}

// Add changes the level by d and returns the new level.
func (t *TimeWeighted) Add(d int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.area += float64(t.cur) * now.Sub(t.last).Seconds()
	t.last = now
	t.cur += d
	return t.cur
}

// Mean is the time-weighted mean level from the start until now.
func (t *TimeWeighted) Mean() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	area := t.area + float64(t.cur)*now.Sub(t.last).Seconds()
	if el := now.Sub(t.start).Seconds(); el > 0 {
		return area / el
	}
	return 0
}

// summary is the median, min and max of one metric over repetitions.
type summary struct {
	med, min, max float64
	n             int
}

func summarize(xs []float64) summary {
	var ys []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ys = append(ys, x)
		}
	}
	if len(ys) == 0 {
		return summary{med: math.NaN(), min: math.NaN(), max: math.NaN()}
	}
	slices.Sort(ys)
	med := ys[len(ys)/2]
	if len(ys)%2 == 0 {
		med = (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
	}
	return summary{med: med, min: ys[0], max: ys[len(ys)-1], n: len(ys)}
}
