package session

import "sync"

// listener delivers events to one function on a goroutine of its own.
type listener struct {
	fn      func(Event)
	sig     chan struct{}
	mu      sync.Mutex
	q       []Event
	stopped bool
	ended   bool
}

func (l *listener) push(ev Event) {
	l.mu.Lock()
	l.q = append(l.q, ev)
	l.mu.Unlock()
	l.signal()
}

func (l *listener) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.signal()
}

func (l *listener) signal() {
	select {
	case l.sig <- struct{}{}:
	default:
	}
}

func (l *listener) loop() {
	for {
		l.mu.Lock()
		if l.stopped || (l.ended && len(l.q) == 0) {
			l.mu.Unlock()
			return
		}
		if len(l.q) == 0 {
			l.mu.Unlock()
			<-l.sig
			continue
		}
		ev := l.q[0]
		l.q[0] = Event{}
		l.q = l.q[1:]
		l.mu.Unlock()
		l.fn(ev)
	}
}

// Listen calls fn with every state transition from now on, in order, on a
// goroutine of its own (a slow fn delays only itself). The last event is
// Closed. stop unregisters fn; events not yet delivered are dropped. stop may
// be called more than once and from within fn.
func (s *Session) Listen(fn func(Event)) (stop func()) {
	l := &listener{fn: fn, sig: make(chan struct{}, 1)}
	s.mu.Lock()
	if s.state == Closed || fn == nil {
		s.mu.Unlock()
		return func() {}
	}
	s.listeners[l] = struct{}{}
	s.lisWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.lisWG.Done()
		l.loop()
	}()
	return func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
		l.signal()
	}
}
